-- q12 processing-time windows: bids per bidder per 10 seconds of processing time. Not supported:
-- tidal's windows are over event time, and processing time would make the answer depend on the clock.
WITH b AS (
    SELECT *, PROCTIME() AS p_time FROM bid
)
SELECT bidder, COUNT(*) AS bid_count, window_start AS starttime, window_end AS endtime
FROM tumble(source => TABLE(b), time_field => DESCRIPTOR(p_time), window_length => INTERVAL 10 SECONDS)
GROUP BY bidder, window_start, window_end;
