-- q6 average selling price per seller: each auction's winning bid (the highest among the bids made while
-- it was open), averaged over the seller's last 11 such bids (the current one and the 10 before it).
SELECT seller, AVG(price) OVER (PARTITION BY seller ORDER BY date_time ROWS BETWEEN 10 PRECEDING AND CURRENT ROW) AS avg_price
FROM (
    SELECT a.id, a.seller, b.price, b.date_time,
           ROW_NUMBER() OVER (PARTITION BY a.id, a.seller ORDER BY b.price DESC) AS rownum
    FROM max_diff_watermark(source => TABLE(auction), time_field => DESCRIPTOR(date_time), offset => INTERVAL 4 SECONDS) AS a
    JOIN max_diff_watermark(source => TABLE(bid), time_field => DESCRIPTOR(date_time), offset => INTERVAL 4 SECONDS) AS b ON a.id = b.auction
    WHERE b.date_time BETWEEN a.date_time AND a.expires
) AS q
WHERE rownum <= 1;
