-- q10 log to file system: every bid with its day and minute (the partition columns of the sink).
SELECT auction, bidder, price, date_time, extra,
       strftime(date_time, '%Y-%m-%d') AS dt, strftime(date_time, '%H:%M') AS hm
FROM max_diff_watermark(source => TABLE(bid), time_field => DESCRIPTOR(date_time), offset => INTERVAL 4 SECONDS);
