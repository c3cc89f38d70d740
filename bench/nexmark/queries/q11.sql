-- q11 user sessions: bids per bidder per session (a session ends after 10 seconds without a bid).
SELECT bidder, COUNT(*) AS bid_count, window_start AS starttime, window_end AS endtime
FROM session(source => TABLE(max_diff_watermark(source => TABLE(bid), time_field => DESCRIPTOR(date_time), offset => INTERVAL 4 SECONDS)), time_field => DESCRIPTOR(date_time), gap => INTERVAL 10 SECONDS,
             key => DESCRIPTOR(bidder))
GROUP BY bidder, window_start, window_end;
