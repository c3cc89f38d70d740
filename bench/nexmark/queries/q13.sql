-- q13 bounded side input join: each bid with the value the side table holds for its auction id mod 10000.
SELECT b.auction, b.bidder, b.price, b.date_time, s.value
FROM max_diff_watermark(source => TABLE(bid), time_field => DESCRIPTOR(date_time), offset => INTERVAL 4 SECONDS) AS b
JOIN side_input AS s ON b.auction % 10000 = s.key;
