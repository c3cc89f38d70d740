-- q9 winning bids: each auction with its winning bid (highest price, earliest among equal prices),
-- among the bids made while it was open.
SELECT id, item_name, description, initial_bid, reserve, date_time, expires, seller, category, extra,
       auction, bidder, price, bid_date_time, bid_extra
FROM (
    SELECT a.*, b.auction, b.bidder, b.price, b.date_time AS bid_date_time, b.extra AS bid_extra,
           ROW_NUMBER() OVER (PARTITION BY a.id ORDER BY b.price DESC, b.date_time ASC) AS rownum
    FROM max_diff_watermark(source => TABLE(auction), time_field => DESCRIPTOR(date_time), offset => INTERVAL 4 SECONDS) AS a
    JOIN max_diff_watermark(source => TABLE(bid), time_field => DESCRIPTOR(date_time), offset => INTERVAL 4 SECONDS) AS b ON a.id = b.auction
    WHERE b.date_time BETWEEN a.date_time AND a.expires
) AS ranked
WHERE rownum <= 1;
