-- tidal run goals.sql (from this directory): goals per team per minute, declared as in Flink SQL.
-- The goals arrive a little out of order; a goal more than 10 s behind the newest one is late.
CREATE TABLE goals (
  team    VARCHAR,
  time    TIMESTAMP,
  player  VARCHAR,
  WATERMARK FOR time AS time - INTERVAL '10' SECOND
) WITH ('connector' = 'filesystem', 'path' = 'goals.csv');

CREATE TABLE scoreboard (team VARCHAR, minute_end TIMESTAMP, goals BIGINT)
WITH ('connector' = 'print', 'format' = 'table');

CREATE VIEW per_minute AS
  SELECT team, window_end, COUNT(*) AS goals
  FROM tumble(source => TABLE(goals), window_length => INTERVAL '1' MINUTE)
  GROUP BY team, window_end;

INSERT INTO scoreboard SELECT * FROM per_minute ORDER BY window_end, team;
