-- q7 highest bid: per 10-second tumbling window, the bids at the window's highest price.
WITH bids AS (
    SELECT * FROM max_diff_watermark(source => TABLE(bid), time_field => DESCRIPTOR(date_time), offset => INTERVAL 4 SECONDS)
), highest AS (
    SELECT MAX(price) AS maxprice, window_end
    FROM tumble(source => TABLE(bids), time_field => DESCRIPTOR(date_time), window_length => INTERVAL 10 SECONDS)
    GROUP BY window_start, window_end
)
SELECT b.auction, b.price, b.bidder, b.date_time, b.extra
FROM bids AS b
JOIN highest AS h ON b.price = h.maxprice
WHERE b.date_time BETWEEN h.window_end - INTERVAL 10 SECONDS AND h.window_end;
