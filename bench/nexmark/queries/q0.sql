-- q0 pass-through: every bid, unchanged (measures the cost of reading and writing events).
SELECT auction, bidder, price, date_time, extra
FROM max_diff_watermark(source => TABLE(bid), time_field => DESCRIPTOR(date_time), offset => INTERVAL 4 SECONDS);
