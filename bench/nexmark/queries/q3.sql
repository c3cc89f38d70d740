-- q3 local item suggestion: sellers in Oregon, Idaho or California who put up an auction in category 10.
WITH auctions AS (
    SELECT * FROM max_diff_watermark(source => TABLE(auction), time_field => DESCRIPTOR(date_time),
                                     offset => INTERVAL 4 SECONDS)
), people AS (
    SELECT * FROM max_diff_watermark(source => TABLE(person), time_field => DESCRIPTOR(date_time),
                                     offset => INTERVAL 4 SECONDS)
)
SELECT p.name, p.city, p.state, a.id
FROM auctions AS a JOIN people AS p ON a.seller = p.id
WHERE a.category = 10 AND (p.state = 'OR' OR p.state = 'ID' OR p.state = 'CA');
