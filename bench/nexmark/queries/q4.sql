-- q4 average price per category: the winning (highest) bid of each auction, among the bids made
-- while it was open, averaged per category.
SELECT q.category, AVG(q.final) AS avg_final
FROM (
    SELECT MAX(b.price) AS final, a.category
    FROM max_diff_watermark(source => TABLE(auction), time_field => DESCRIPTOR(date_time), offset => INTERVAL 4 SECONDS) AS a
    JOIN max_diff_watermark(source => TABLE(bid), time_field => DESCRIPTOR(date_time), offset => INTERVAL 4 SECONDS) AS b ON a.id = b.auction
    WHERE b.date_time BETWEEN a.date_time AND a.expires
    GROUP BY a.id, a.category
) AS q
GROUP BY q.category;
