-- sqlite3 workload: a file database built in one transaction (recursive
-- CTE, deterministic values), indexes, joins, GROUP BY, window functions,
-- JSON, a trigger, LIKE/GLOB, a constraint error caught by the shell, FTS5.
.bail off
.headers off
.mode list
PRAGMA journal_mode = WAL;
CREATE TABLE t(id INTEGER PRIMARY KEY, grp INTEGER, name TEXT, v REAL, js TEXT);
CREATE TABLE log(n INTEGER);
CREATE TRIGGER tr AFTER UPDATE ON t WHEN new.grp = 7 BEGIN INSERT INTO log VALUES (new.id); END;
BEGIN;
WITH RECURSIVE r(i, s) AS (SELECT 1, 42 UNION ALL SELECT i + 1, (s * 16807) % 2147483647 FROM r WHERE i < 120000)
INSERT INTO t SELECT i, s % 97, printf('%s%05d', substr('alphabetagammadelta', 1 + (s % 4) * 5, 5), s % 99991), (s % 100000) / 7.0,
    json_object('k', s % 13, 'tags', json_array(s % 3, s % 5)) FROM r;
COMMIT;
CREATE INDEX t_grp ON t(grp, v);
CREATE UNIQUE INDEX t_name_id ON t(name, id);
SELECT count(*), sum(grp), round(sum(v), 3), min(name), max(name) FROM t;
SELECT grp, count(*), round(avg(v), 4) FROM t GROUP BY grp ORDER BY grp LIMIT 20;
SELECT name, grp, rank() OVER (PARTITION BY grp ORDER BY v DESC, id) AS rk FROM t WHERE grp < 3 ORDER BY grp, rk LIMIT 15;
SELECT a.grp, count(*) FROM t a JOIN t b ON b.id = a.id - 1 AND +a.grp = +b.grp GROUP BY a.grp ORDER BY 2 DESC, 1 LIMIT 10;
SELECT json_extract(js, '$.k') AS k, count(*), sum(json_extract(js, '$.tags[1]')) FROM t GROUP BY k ORDER BY k;
SELECT count(*) FROM t WHERE name LIKE 'amm%9%' OR name GLOB 'bet*[13]';
UPDATE t SET v = v + 1 WHERE grp IN (7, 8);
SELECT count(*), min(n), max(n) FROM log;
INSERT INTO t(id, grp, name) VALUES (1, 0, 'dup');
SELECT 'still running', changes();
CREATE VIRTUAL TABLE ft USING fts5(body);
INSERT INTO ft SELECT name || ' ' || grp || ' ' || (CASE WHEN grp % 2 THEN 'odd' ELSE 'even' END) FROM t WHERE id % 4 = 0;
SELECT count(*) FROM ft WHERE ft MATCH 'odd AND alpha*';
SELECT rowid, body FROM ft WHERE ft MATCH 'even NOT gamma*' ORDER BY rank, rowid LIMIT 5;
SELECT substr(group_concat(name, ','), 1, 80) FROM (SELECT name FROM t ORDER BY v DESC, id LIMIT 400);
SELECT total(length(replace(upper(name), 'A', 'aa'))) FROM t;
PRAGMA integrity_check;
