-- q8 monitor new users: people who opened an auction in the same 10-second window they registered in.
WITH p AS (
    SELECT id, name, window_start, window_end
    FROM tumble(source => TABLE(max_diff_watermark(source => TABLE(person), time_field => DESCRIPTOR(date_time), offset => INTERVAL 4 SECONDS)), time_field => DESCRIPTOR(date_time), window_length => INTERVAL 10 SECONDS)
    GROUP BY id, name, window_start, window_end
), a AS (
    SELECT seller, window_start, window_end
    FROM tumble(source => TABLE(max_diff_watermark(source => TABLE(auction), time_field => DESCRIPTOR(date_time), offset => INTERVAL 4 SECONDS)), time_field => DESCRIPTOR(date_time), window_length => INTERVAL 10 SECONDS)
    GROUP BY seller, window_start, window_end
)
SELECT p.id, p.name, p.window_start AS starttime
FROM p JOIN a ON p.id = a.seller AND p.window_start = a.window_start AND p.window_end = a.window_end;
