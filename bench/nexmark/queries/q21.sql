-- q21 add channel id: a channel id from the hot channels' names, else from the url's channel_id parameter.
SELECT auction, bidder, price, channel,
       CASE
           WHEN lower(channel) = 'apple' THEN '0'
           WHEN lower(channel) = 'google' THEN '1'
           WHEN lower(channel) = 'facebook' THEN '2'
           WHEN lower(channel) = 'baidu' THEN '3'
           ELSE regexp_extract(url, '(&|^)channel_id=([^&]*)', 2)
       END AS channel_id
FROM max_diff_watermark(source => TABLE(bid), time_field => DESCRIPTOR(date_time), offset => INTERVAL 4 SECONDS)
WHERE regexp_extract(url, '(&|^)channel_id=([^&]*)', 2) <> ''
   OR lower(channel) IN ('apple', 'google', 'facebook', 'baidu');
