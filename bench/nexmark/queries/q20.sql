-- q20 expand bid with auction: bids joined with their auction, for auctions in category 10.
SELECT b.auction, b.bidder, b.price, b.channel, b.url, b.date_time AS bid_date_time, b.extra AS bid_extra,
       a.item_name, a.description, a.initial_bid, a.reserve, a.date_time AS auction_date_time, a.expires,
       a.seller, a.category, a.extra AS auction_extra
FROM max_diff_watermark(source => TABLE(bid), time_field => DESCRIPTOR(date_time), offset => INTERVAL 4 SECONDS) AS b
JOIN max_diff_watermark(source => TABLE(auction), time_field => DESCRIPTOR(date_time), offset => INTERVAL 4 SECONDS) AS a ON b.auction = a.id
WHERE a.category = 10;
