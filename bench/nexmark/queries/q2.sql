-- q2 selection: the bids on a sample of auctions (ids divisible by 123).
SELECT auction, price
FROM max_diff_watermark(source => TABLE(bid), time_field => DESCRIPTOR(date_time), offset => INTERVAL 4 SECONDS)
WHERE auction % 123 = 0;
