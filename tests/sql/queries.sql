-- one query per statement; "-- name:" starts each. Runs on tidal and on DuckDB (the oracle).
-- name: select_star
SELECT * FROM 'orders.csv';
-- name: projection_arith
SELECT id, qty * price AS total, qty + 1, price - 0.5, qty % 3, -qty FROM 'orders.csv';
-- name: division_by_zero_null
SELECT id, qty / (qty - qty), price / 2 FROM 'orders.csv';
-- name: where_compare
SELECT id, customer FROM 'orders.csv' WHERE qty >= 3 AND price < 20;
-- name: where_or_not
SELECT id FROM 'orders.csv' WHERE NOT (qty > 2) OR customer = 'carol';
-- name: nulls_is_null
SELECT id, note FROM 'orders.csv' WHERE note IS NULL;
-- name: nulls_is_not_null
SELECT id, note FROM 'orders.csv' WHERE note IS NOT NULL;
-- name: null_comparison_drops
SELECT id FROM 'orders.csv' WHERE discount > 0.1;
-- name: coalesce
SELECT id, COALESCE(discount, 0.0) AS d, COALESCE(note, 'none') FROM 'orders.csv';
-- name: case_searched
SELECT id, CASE WHEN qty > 4 THEN 'many' WHEN qty > 1 THEN 'some' ELSE 'one' END AS size FROM 'orders.csv';
-- name: case_simple
SELECT id, CASE customer WHEN 'alice' THEN 1 WHEN 'bob' THEN 2 END AS c FROM 'orders.csv';
-- name: cast_types
SELECT id, CAST(price AS INTEGER), CAST(qty AS DOUBLE), CAST(id AS VARCHAR) FROM 'orders.csv';
-- name: string_functions
SELECT id, upper(customer), lower(customer), length(customer), substring(customer, 2, 3), customer || '!' FROM 'orders.csv';
-- name: string_more
SELECT id, concat(customer, '-', id), replace(customer, 'a', 'A'), trim('  ' || customer || ' ') FROM 'orders.csv';
-- name: like
SELECT id, customer FROM 'orders.csv' WHERE customer LIKE '%a%';
-- name: like_underscore
SELECT id FROM 'orders.csv' WHERE customer LIKE '_ob';
-- name: ilike
SELECT id FROM 'orders.csv' WHERE customer ILIKE 'A%';
-- name: regexp_matches
SELECT id FROM 'orders.csv' WHERE regexp_matches(customer, '^[ab]');
-- name: in_list
SELECT id FROM 'orders.csv' WHERE customer IN ('alice', 'dave');
-- name: not_in_list
SELECT id FROM 'orders.csv' WHERE customer NOT IN ('alice', 'dave');
-- name: between
SELECT id FROM 'orders.csv' WHERE price BETWEEN 5 AND 15;
-- name: timestamp_filter
SELECT id, ts FROM 'orders.csv' WHERE ts >= '2024-03-01 10:30:00';
-- name: date_parts
SELECT id, year(ts), month(ts), day(ts), hour(ts), minute(ts) FROM 'orders.csv';
-- name: extract
SELECT id, EXTRACT(hour FROM ts) FROM 'orders.csv';
-- name: date_trunc
SELECT id, date_trunc('hour', ts) FROM 'orders.csv';
-- name: interval_arith
SELECT id, ts + INTERVAL 1 HOUR, ts - INTERVAL 30 MINUTE FROM 'orders.csv';
-- name: interval_filter
SELECT id FROM 'orders.csv' WHERE ts + INTERVAL 2 HOUR > '2024-03-01 12:00:00';
-- name: subquery_from
SELECT s.id, s.total FROM (SELECT id, qty * price AS total FROM 'orders.csv') s WHERE s.total > 20;
-- name: cte
WITH big AS (SELECT id, customer FROM 'orders.csv' WHERE qty > 2) SELECT customer FROM big;
-- name: cte_chain
WITH a AS (SELECT id, qty FROM 'orders.csv'), b AS (SELECT id, qty * 2 AS q2 FROM a) SELECT * FROM b WHERE q2 > 4;
-- name: in_subquery
SELECT id, customer FROM 'orders.csv' WHERE customer IN (SELECT name FROM 'customers.csv' WHERE vip);
-- name: not_in_subquery
SELECT id FROM 'orders.csv' WHERE customer NOT IN (SELECT name FROM 'customers.csv' WHERE vip);
-- name: union_all
SELECT id, customer FROM 'orders.csv' WHERE qty > 3 UNION ALL SELECT id, customer FROM 'orders.csv' WHERE qty < 2;
-- name: order_limit
SELECT id, price FROM 'orders.csv' ORDER BY price DESC, id LIMIT 3;
-- name: order_limit_offset
SELECT id FROM 'orders.csv' ORDER BY id LIMIT 4 OFFSET 2;
-- name: tsv_file
SELECT city, pop FROM 'cities.tsv' WHERE pop > 100;
-- name: json_file
SELECT user, score FROM 'events.json' WHERE score > 2;
-- name: parquet_file
SELECT id, customer, qty FROM 'orders.parquet' WHERE qty > 2;
-- name: arrow_file
SELECT id, customer FROM 'orders.arrow' WHERE price > 10;
-- name: read_csv_sep
SELECT a, b FROM read_csv('pipes.txt', sep => '|') WHERE a > 1;
-- name: greatest_least_abs
SELECT id, greatest(qty, 3), least(qty, 3), abs(qty - 3), round(price, 1) FROM 'orders.csv';
-- name: nullif
SELECT id, nullif(qty, 1) FROM 'orders.csv';
-- name: count_star [agg]
SELECT COUNT(*) FROM 'orders.csv';
-- name: group_count [agg]
SELECT customer, COUNT(*) FROM 'orders.csv' GROUP BY customer;
-- name: group_sum_avg [agg]
SELECT customer, SUM(qty), AVG(price), MIN(price), MAX(qty) FROM 'orders.csv' GROUP BY customer;
-- name: group_count_nulls [agg]
SELECT customer, COUNT(discount), COUNT(*) FROM 'orders.csv' GROUP BY customer;
-- name: count_distinct [agg]
SELECT COUNT(DISTINCT customer) FROM 'orders.csv';
-- name: having [agg]
SELECT customer, SUM(qty) AS q FROM 'orders.csv' GROUP BY customer HAVING SUM(qty) > 4;
-- name: group_expr [agg]
SELECT qty % 2 AS parity, COUNT(*) FROM 'orders.csv' GROUP BY qty % 2;
-- name: group_by_alias [agg]
SELECT hour(ts) AS h, SUM(qty * price) FROM 'orders.csv' GROUP BY h;
-- name: agg_expression [agg]
SELECT customer, SUM(qty) * 2 + 1, MAX(price) - MIN(price) FROM 'orders.csv' GROUP BY customer;
-- name: distinct [agg]
SELECT DISTINCT customer FROM 'orders.csv';
-- name: union_distinct [agg]
SELECT customer FROM 'orders.csv' UNION SELECT name FROM 'customers.csv';
-- name: global_agg_empty [agg]
SELECT COUNT(*), SUM(qty) FROM 'orders.csv' WHERE qty > 100;
-- name: group_order_limit [agg]
SELECT customer, SUM(qty) AS q FROM 'orders.csv' GROUP BY customer ORDER BY q DESC, customer LIMIT 2;
-- name: agg_over_cte [agg]
WITH t AS (SELECT customer, qty * price AS v FROM 'orders.csv') SELECT customer, SUM(v) FROM t GROUP BY customer;
-- name: agg_parquet [agg]
SELECT customer, COUNT(*), AVG(qty) FROM 'orders.parquet' GROUP BY customer;
-- name: agg_json [agg]
SELECT user, SUM(score) FROM 'events.json' GROUP BY user;
-- name: first_last [agg]
SELECT customer, FIRST(qty), LAST(qty) FROM 'orders.csv' GROUP BY customer;
-- name: first_last_global_nulls [agg]
SELECT FIRST(customer), LAST(customer), FIRST(note), LAST(discount) FROM 'orders.csv';
-- name: median_quantile_cont [agg]
SELECT customer, median(price), quantile_cont(price, 0.25) FROM 'orders.csv' GROUP BY customer;
-- name: quantile_disc [agg]
SELECT quantile_disc(price, 0.5), quantile_cont(qty, 0.9) FROM 'orders.csv';
-- name: percentile_within_group [agg]
SELECT customer, percentile_cont(0.3) WITHIN GROUP (ORDER BY price) FROM 'orders.csv' GROUP BY customer;
-- name: stddev_variance_samp_pop [agg]
SELECT stddev_samp(price), var_samp(price), stddev_pop(price), var_pop(price) FROM 'orders.csv';
-- name: stddev_variance_grouped [agg]
SELECT customer, stddev(qty), variance(qty), var_pop(qty) FROM 'orders.csv' GROUP BY customer HAVING COUNT(*) > 1;
-- name: count_distinct_with_nulls [agg]
SELECT COUNT(DISTINCT customer), COUNT(DISTINCT note) FROM 'orders.csv';
-- name: count_distinct_grouped [agg]
SELECT customer, COUNT(DISTINCT note) FROM 'orders.csv' GROUP BY customer;
-- name: null_group_key_aggs [agg]
SELECT note, COUNT(*), SUM(discount), AVG(discount), MIN(discount), MAX(discount) FROM 'orders.csv' GROUP BY note;
-- name: case_group_key [agg]
SELECT CASE WHEN qty > 3 THEN 'big' ELSE 'small' END AS size, COUNT(*), SUM(price) FROM 'orders.csv' GROUP BY size;
-- name: case_inside_sum [agg]
SELECT customer, SUM(CASE WHEN note IS NULL THEN 1 ELSE 0 END) AS no_note FROM 'orders.csv' GROUP BY customer;
-- name: min_max_timestamps [agg]
SELECT customer, MIN(ts), MAX(ts) FROM 'orders.csv' GROUP BY customer;
-- name: min_max_strings [agg]
SELECT MIN(customer), MAX(customer) FROM 'orders.csv';
-- name: having_two_aggregates [agg]
SELECT customer, AVG(qty) FROM 'orders.csv' GROUP BY customer HAVING AVG(qty) > 2 AND MAX(price) < 30;
-- name: having_order_by [agg]
SELECT customer, COUNT(*) AS n FROM 'orders.csv' WHERE note IS NOT NULL GROUP BY customer HAVING COUNT(*) >= 1 ORDER BY n DESC, customer;
-- name: aggs_over_only_nulls [agg]
SELECT SUM(discount), AVG(discount), COUNT(discount), MIN(discount) FROM 'orders.csv' WHERE discount IS NULL;
-- name: json_grouped [agg]
SELECT user, COUNT(*), MAX(score), MIN(at) FROM 'events.json' GROUP BY user;
-- name: tsv_having [agg]
SELECT city, SUM(pop) FROM 'cities.tsv' GROUP BY city HAVING SUM(pop) > 100;
-- name: arrow_grouped [agg]
SELECT customer, COUNT(*), SUM(price) FROM 'orders.arrow' GROUP BY customer;
-- name: read_csv_grouped [agg]
SELECT b, COUNT(*) FROM read_csv('pipes.txt', sep => '|') GROUP BY b;
-- name: parquet_having [agg]
SELECT customer, SUM(qty) FROM 'orders.parquet' WHERE price > 5 GROUP BY customer HAVING SUM(qty) > 2;
-- name: parquet_median [agg]
SELECT customer, median(qty), quantile_disc(qty, 0.75) FROM 'orders.parquet' GROUP BY customer;
-- name: coalesce_group_key [agg]
SELECT COALESCE(note, 'none') AS n, COUNT(*) FROM 'orders.csv' GROUP BY n;
-- name: join_inner_on
SELECT o.id, o.customer, c.city FROM 'orders.csv' o JOIN 'customers.csv' c ON o.customer = c.name;
-- name: join_inner_keyword_star
SELECT * FROM 'orders.csv' AS o INNER JOIN 'customers.csv' AS c ON c.name = o.customer WHERE o.qty > 1;
-- name: join_left_outer
SELECT o.id, c.city, c.vip FROM 'orders.csv' o LEFT OUTER JOIN 'customers.csv' c ON o.customer = c.name;
-- name: join_right
SELECT o.id, c.name, c.city FROM 'orders.csv' o RIGHT JOIN 'customers.csv' c ON o.customer = c.name;
-- name: join_right_star
SELECT * FROM 'customers.csv' c RIGHT JOIN 'cities.tsv' t ON c.city = t.city;
-- name: join_full_outer
SELECT c.name, c.city, t.city AS tcity, t.pop FROM 'customers.csv' c FULL OUTER JOIN 'cities.tsv' t ON c.city = t.city;
-- name: join_cross
SELECT c.name, t.city FROM 'customers.csv' c CROSS JOIN 'cities.tsv' t;
-- name: join_comma_where
SELECT o.id, c.city FROM 'orders.csv' o, 'customers.csv' c WHERE o.customer = c.name AND o.qty > 2 AND c.vip;
-- name: join_using
SELECT city, name, pop FROM 'customers.csv' JOIN 'cities.tsv' USING (city);
-- name: join_using_star
SELECT * FROM 'customers.csv' c LEFT JOIN 'cities.tsv' t USING (city);
-- name: join_full_using
SELECT city, name, pop FROM 'customers.csv' FULL JOIN 'cities.tsv' USING (city);
-- name: join_self
SELECT a.id, b.id AS other FROM 'orders.csv' a JOIN 'orders.csv' b ON a.customer = b.customer AND a.id < b.id;
-- name: join_three_way
SELECT o.id, c.city, t.pop FROM 'orders.csv' o JOIN 'customers.csv' c ON o.customer = c.name JOIN 'cities.tsv' t ON c.city = t.city;
-- name: join_group_by [agg]
SELECT c.city, count(*) AS n, sum(o.qty * o.price) AS revenue FROM 'orders.csv' o JOIN 'customers.csv' c ON o.customer = c.name GROUP BY c.city;
-- name: join_left_group_by [agg]
SELECT o.customer, count(c.name) AS known, count(*) AS n FROM 'orders.csv' o LEFT JOIN 'customers.csv' c ON o.customer = c.name GROUP BY o.customer;
-- name: join_null_keys
SELECT a.id, b.id AS other, a.note FROM 'orders.csv' a JOIN 'orders.csv' b ON a.note = b.note;
-- name: join_left_null_keys
SELECT a.id, b.id AS other, b.note FROM 'orders.csv' a LEFT JOIN 'orders.csv' b ON a.note = b.note AND b.id > 2;
-- name: join_full_null_keys
SELECT a.id, b.id AS other FROM 'orders.csv' a FULL JOIN 'orders.csv' b ON a.discount = b.discount;
-- name: join_multi_key
SELECT a.id, b.id AS other FROM 'orders.csv' a JOIN 'orders.csv' b ON a.customer = b.customer AND a.qty = b.qty;
-- name: join_subquery_side
SELECT c.name, s.total FROM 'customers.csv' c JOIN (SELECT customer, qty * price AS total FROM 'orders.csv' WHERE qty > 2) s ON s.customer = c.name;
-- name: join_cte_both_sides [agg]
WITH spend AS (SELECT customer, sum(qty) AS units FROM 'orders.csv' GROUP BY customer), lis AS (SELECT name FROM 'customers.csv' WHERE city = 'Lisbon') SELECT lis.name, spend.units FROM lis LEFT JOIN spend ON lis.name = spend.customer;
-- name: join_left_on_right_condition
SELECT o.id, c.name FROM 'orders.csv' o LEFT JOIN 'customers.csv' c ON o.customer = c.name AND c.city = 'Lisbon';
-- name: join_non_equi_inner
SELECT o.id, t.city FROM 'orders.csv' o JOIN 'cities.tsv' t ON o.qty * 100 < t.pop AND o.price > 20;
-- name: join_order_limit
SELECT o.id, c.city FROM 'orders.csv' o JOIN 'customers.csv' c ON o.customer = c.name ORDER BY o.price DESC LIMIT 3;
-- name: join_distinct
SELECT DISTINCT c.city FROM 'orders.csv' o JOIN 'customers.csv' c ON o.customer = c.name;
-- name: join_formats
SELECT p.id, a.customer, j.user FROM 'orders.parquet' p JOIN 'orders.arrow' a ON p.id = a.id JOIN 'events.json' j ON p.qty = j.score;
-- name: join_computed_key
SELECT o.id, c.name FROM 'orders.csv' o JOIN 'customers.csv' c ON upper(o.customer) = upper(c.name) AND o.qty + 1 > 3;
-- name: join_widened_key
SELECT o.id, t.city FROM 'orders.csv' o LEFT JOIN 'cities.tsv' t ON o.price * 100 = t.pop - 0.5 + 0.5;
-- name: join_int_double_key
SELECT a.id, b.id AS other FROM 'orders.csv' a FULL JOIN 'orders.csv' b ON a.qty = b.price;
-- name: join_star_self
SELECT * FROM 'customers.csv' a JOIN 'customers.csv' b ON a.city = b.city;
-- name: join_using_right
SELECT * FROM 'customers.csv' RIGHT JOIN 'cities.tsv' USING (city);
-- name: join_left_subquery_left_side
SELECT s.customer, s.n, c.city FROM (SELECT customer, count(*) AS n FROM 'orders.csv' GROUP BY customer) s LEFT JOIN 'customers.csv' c ON s.customer = c.name WHERE s.n > 1;
-- name: join_natural
SELECT * FROM 'customers.csv' NATURAL JOIN 'cities.tsv';
-- name: join_natural_left
SELECT name, city, pop FROM 'customers.csv' NATURAL LEFT JOIN 'cities.tsv';
-- name: join_semi
SELECT * FROM 'orders.csv' o SEMI JOIN 'customers.csv' c ON o.customer = c.name AND c.vip;
-- name: join_anti_null_keys
SELECT id, note FROM 'orders.csv' a ANTI JOIN (SELECT note FROM 'orders.csv' WHERE id > 5) b ON a.note = b.note;
-- name: join_semi_where
SELECT o.id FROM 'orders.csv' o SEMI JOIN 'customers.csv' c ON o.customer = c.name AND o.price > 5 WHERE o.qty > 1;
-- name: join_left_residual_both_sides
SELECT o.id, o.customer, o.note, c.city FROM 'orders.csv' o LEFT JOIN 'customers.csv' c ON o.customer = c.name AND o.price < length(c.city) * 3;
-- name: join_left_residual_left_only
SELECT o.*, c.city FROM 'orders.csv' o LEFT JOIN 'customers.csv' c ON o.customer = c.name AND o.qty > 2;
-- name: join_right_residual
SELECT o.id, c.name, o.discount FROM 'orders.parquet' o RIGHT JOIN 'customers.csv' c ON o.customer = c.name AND o.qty >= 3;
-- name: join_full_residual
SELECT o.id, o.note, c.name, c.vip FROM 'orders.csv' o FULL JOIN 'customers.csv' c ON o.customer = c.name AND (o.discount IS NULL OR c.vip);
-- name: join_left_no_equality
SELECT o.id, t.city FROM 'orders.csv' o LEFT JOIN 'cities.tsv' t ON o.qty * 100 > t.pop + 300;
-- name: join_full_no_equality
SELECT o.id, o.price, t.city FROM 'orders.arrow' o FULL JOIN 'cities.tsv' t ON o.qty * 100 > t.pop + 300 AND o.price > 10;
-- name: join_semi_no_equality
SELECT * FROM 'orders.parquet' o SEMI JOIN 'cities.tsv' t ON o.qty * 100 > t.pop + 300;
-- name: join_anti_no_equality
SELECT id, customer, qty FROM 'orders.csv' o ANTI JOIN 'cities.tsv' t ON o.qty * 100 > t.pop + 300;
-- name: join_anti_residual
SELECT * FROM 'orders.csv' o ANTI JOIN 'customers.csv' c ON o.customer = c.name AND o.qty > 2;
-- name: join_semi_residual_both_sides
SELECT * FROM 'orders.csv' o SEMI JOIN 'customers.csv' c ON o.customer = c.name AND (c.vip OR o.note IS NULL);
-- name: join_inner_inequality_only
SELECT e.user, e.score, t.city FROM 'events.json' e JOIN 'cities.tsv' t ON e.score * 200 > t.pop;
-- name: join_left_residual_group_by [agg]
SELECT c.city, count(o.id) AS n, sum(o.qty) AS units FROM 'customers.csv' c LEFT JOIN 'orders.csv' o ON o.customer = c.name AND o.ts < '2024-03-01 12:00:00' GROUP BY c.city;
-- name: join_left_residual_subquery_sides
SELECT s.customer, s.n, t.city FROM (SELECT customer, count(*) AS n FROM 'orders.csv' GROUP BY customer) s LEFT JOIN (SELECT * FROM 'cities.tsv') t ON s.n * 300 > t.pop;
-- name: join_left_right_only_condition
SELECT o.id, t.city FROM 'orders.csv' o LEFT JOIN 'cities.tsv' t ON t.pop > 600;
-- name: join_left_on_true
SELECT t.city, o.id FROM 'orders.csv' o LEFT JOIN 'cities.tsv' t ON true;
-- name: join_full_on_false
SELECT t.city, o.id FROM 'orders.csv' o FULL JOIN 'cities.tsv' t ON false;
-- name: join_anti_or_condition
SELECT o.id FROM 'orders.csv' o ANTI JOIN 'cities.tsv' t ON o.qty * 100 > t.pop + 300 OR o.note IS NULL;
-- name: join_left_residual_order_limit [agg]
SELECT o.id, x.n FROM 'orders.csv' o LEFT JOIN (SELECT customer, count(*) AS n FROM 'orders.csv' GROUP BY customer) x ON o.customer = x.customer AND x.n > 1 ORDER BY o.id DESC LIMIT 4;
-- name: cross_global_agg
SELECT o.id, o.qty * 1.0 / t.total AS share FROM 'orders.csv' o CROSS JOIN (SELECT sum(qty) AS total FROM 'orders.csv') t;
-- name: join_empty_side
SELECT o.id, c.city FROM 'orders.csv' o LEFT JOIN (SELECT * FROM 'customers.csv' WHERE city = 'Nowhere') c ON o.customer = c.name;
-- name: join_in_subquery_on
SELECT o.id, c.city FROM 'orders.csv' o JOIN 'customers.csv' c ON o.customer = c.name AND o.id IN (SELECT id FROM 'orders.csv' WHERE qty > 2);
-- name: join_union
SELECT c.name, t.pop FROM 'customers.csv' c JOIN (SELECT city, pop FROM 'cities.tsv' UNION ALL SELECT 'Rome' AS city, 3 AS pop FROM 'customers.csv' WHERE name = 'gina') t USING (city);
-- name: join_having_order
SELECT c.city, count(*) AS n FROM 'orders.csv' o JOIN 'customers.csv' c ON o.customer = c.name GROUP BY c.city HAVING count(*) > 2 ORDER BY n DESC;
-- name: join_right_on_optional_condition
SELECT o.id, c.name FROM 'orders.csv' o RIGHT JOIN 'customers.csv' c ON o.customer = c.name AND o.qty > 2 WHERE c.city <> 'Oslo';
-- name: join_full_where
SELECT c.name, t.city FROM 'customers.csv' c FULL JOIN 'cities.tsv' t ON c.city = t.city WHERE t.pop > 100 OR c.name IS NULL;
