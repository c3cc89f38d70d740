-- q5 hot items: per 10-second window sliding every 2 seconds, the auctions with the most bids.
WITH counts AS (
    SELECT auction, COUNT(*) AS num, window_start, window_end
    FROM hop(source => TABLE(max_diff_watermark(source => TABLE(bid), time_field => DESCRIPTOR(date_time), offset => INTERVAL 4 SECONDS)),
             time_field => DESCRIPTOR(date_time), window_length => INTERVAL 10 SECONDS, hop => INTERVAL 2 SECONDS)
    GROUP BY auction, window_start, window_end
), most AS (
    SELECT MAX(num) AS maxn, window_start, window_end
    FROM counts
    GROUP BY window_start, window_end
)
SELECT c.auction, c.num
FROM counts AS c
JOIN most AS m ON c.window_start = m.window_start AND c.window_end = m.window_end AND c.num >= m.maxn;
