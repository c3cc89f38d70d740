-- q1 currency conversion: bid prices from dollars to euros.
SELECT auction, bidder, 0.908 * price AS price, date_time, extra
FROM max_diff_watermark(source => TABLE(bid), time_field => DESCRIPTOR(date_time), offset => INTERVAL 4 SECONDS);
