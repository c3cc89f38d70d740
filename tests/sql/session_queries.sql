-- Golden queries of tidal's own dialect (session windows): each is followed by "-- duckdb:" and the
-- DuckDB query computing the same answer with window functions (LAG gap detection, running sum).
-- name: session_per_key [agg]
SELECT customer, window_start, window_end, count(*) AS n, sum(qty) AS units FROM session(source => TABLE('orders.csv'), time_field => DESCRIPTOR(ts), gap => INTERVAL 3 HOURS, key => DESCRIPTOR(customer)) s GROUP BY customer, window_start, window_end;
-- duckdb:
WITH y AS (SELECT *, LAG(ts) OVER (PARTITION BY customer ORDER BY ts) AS prev FROM 'orders.csv'),
z AS (SELECT *, SUM(CASE WHEN prev IS NULL OR ts - prev >= INTERVAL 3 HOURS THEN 1 ELSE 0 END) OVER (PARTITION BY customer ORDER BY ts ROWS UNBOUNDED PRECEDING) AS sid FROM y)
SELECT customer, MIN(ts) AS window_start, MAX(ts) + INTERVAL 3 HOURS AS window_end, count(*) AS n, sum(qty) AS units FROM z GROUP BY customer, sid;
-- name: session_max_duration_rows
SELECT id, ts, window_start, window_end FROM session(source => TABLE('orders.parquet'), time_field => DESCRIPTOR(ts), gap => INTERVAL 50 MINUTES, max_duration => INTERVAL 2 HOURS) s;
-- duckdb:
WITH x AS (SELECT id, ts, epoch_us(ts) AS t FROM 'orders.parquet'),
y AS (SELECT *, LAG(t) OVER (ORDER BY t) AS prev FROM x),
z AS (SELECT *, SUM(CASE WHEN prev IS NULL OR t - prev >= 3000000000 OR t // 7200000000 <> prev // 7200000000 THEN 1 ELSE 0 END) OVER (ORDER BY t ROWS UNBOUNDED PRECEDING) AS sid FROM y)
SELECT id, ts, make_timestamp(MIN(t) OVER (PARTITION BY sid)) AS window_start, make_timestamp(LEAST(MAX(t) OVER (PARTITION BY sid) + 3000000000, (MIN(t) OVER (PARTITION BY sid) // 7200000000 + 1) * 7200000000)) AS window_end FROM z;
-- name: session_gap_boundary_json [agg]
SELECT user, window_start, window_end, count(*) AS n FROM session(source => TABLE('events.json'), time_field => DESCRIPTOR(at), gap => INTERVAL 3 MINUTES, key => DESCRIPTOR(user)) e WHERE score > 0 GROUP BY user, window_start, window_end;
-- duckdb:
WITH y AS (SELECT *, CAST(at AS TIMESTAMP) AS t, LAG(CAST(at AS TIMESTAMP)) OVER (PARTITION BY user ORDER BY CAST(at AS TIMESTAMP)) AS prev FROM 'events.json'),
z AS (SELECT *, SUM(CASE WHEN prev IS NULL OR t - prev >= INTERVAL 3 MINUTES THEN 1 ELSE 0 END) OVER (PARTITION BY user ORDER BY t ROWS UNBOUNDED PRECEDING) AS sid FROM y)
SELECT user, MIN(t) AS window_start, MAX(t) + INTERVAL 3 MINUTES AS window_end, count(*) FILTER (WHERE score > 0) AS n FROM z GROUP BY user, sid HAVING n > 0;
-- name: session_over_watermark_cte [agg]
WITH w AS (SELECT * FROM max_diff_watermark(source => TABLE('orders.csv'), time_field => DESCRIPTOR(ts), offset => INTERVAL 10 MINUTES) o WHERE qty > 1) SELECT window_end, count(*) AS n FROM session(source => TABLE(w), time_field => DESCRIPTOR(ts), gap => INTERVAL 1 HOUR) s GROUP BY window_end TRIGGER ON WATERMARK;
-- duckdb:
WITH y AS (SELECT *, LAG(ts) OVER (ORDER BY ts) AS prev FROM 'orders.csv' WHERE qty > 1),
z AS (SELECT *, SUM(CASE WHEN prev IS NULL OR ts - prev >= INTERVAL 1 HOUR THEN 1 ELSE 0 END) OVER (ORDER BY ts ROWS UNBOUNDED PRECEDING) AS sid FROM y)
SELECT MAX(ts) + INTERVAL 1 HOUR AS window_end, count(*) AS n FROM z GROUP BY sid;
