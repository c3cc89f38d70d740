-- q14 calculation: converted prices in a range, the time of day of each bid, and how many 'c'
-- characters its extra field holds.
SELECT auction, bidder, 0.908 * price AS price,
       CASE
           WHEN hour(date_time) >= 8 AND hour(date_time) <= 18 THEN 'dayTime'
           WHEN hour(date_time) <= 6 OR hour(date_time) >= 20 THEN 'nightTime'
           ELSE 'otherTime'
       END AS bid_time_type,
       date_time, extra,
       length(extra) - length(replace(extra, 'c', '')) AS c_counts
FROM max_diff_watermark(source => TABLE(bid), time_field => DESCRIPTOR(date_time), offset => INTERVAL 4 SECONDS)
WHERE 0.908 * price > 1000000 AND 0.908 * price < 50000000;
