package sqlinspect

import (
	"strings"
	"testing"
)

type sqlCase struct {
	d           Dialect
	sql         string
	readOnly    bool
	destructive bool
	detail      string // substring of Detail; "" to skip
}

// Every rule of DESIGN §4 has an accepting and a rejecting case.
var sqlCases = []sqlCase{
	// Statement kinds.
	{SQLite, "SELECT count(*) FROM users", true, false, "1 read-only statement"},
	{SQLite, "select * from users where id = 1;", true, false, ""},
	{SQLite, "SELECT 1; SELECT 2;;", true, false, "2 read-only statements"},
	{SQLite, "SELECT 1; DELETE FROM t", false, true, "statement 2 is DELETE"},
	{SQLite, "INSERT INTO t VALUES (1)", false, false, "statement 1 is INSERT"},
	{SQLite, "UPDATE t SET a = 1 WHERE id = 2", false, false, "statement 1 is UPDATE"},
	{SQLite, "VALUES (1), (2)", true, false, ""},
	{Postgres, "TABLE users", true, false, ""},
	{Postgres, "SHOW search_path", true, false, ""},
	{MySQL, "SHOW TABLES", true, false, ""},
	{MySQL, "SHOW CREATE TABLE t", true, false, ""},
	{Postgres, "(SELECT 1) UNION (SELECT 2)", true, false, ""},
	{Postgres, "(DELETE FROM t)", false, true, "DELETE"},
	{Postgres, "SET search_path = x", false, false, "statement 1 is SET"},
	{Postgres, "COPY t TO '/tmp/x'", false, false, "COPY"},
	{Postgres, "CALL p()", false, false, "CALL"},
	{Postgres, "DO $$ BEGIN DELETE FROM t; END $$", false, false, "statement 1 is DO"},
	{Postgres, "ANALYZE t", false, false, "ANALYZE"},
	{Postgres, "LISTEN x", false, false, "LISTEN"},
	{SQLite, "ATTACH 'x.db' AS x", false, false, "ATTACH"},
	{SQLite, "VACUUM INTO '/tmp/x.db'", false, false, "VACUUM"},
	{SQLite, "REINDEX", false, false, "REINDEX"},
	{MySQL, "REPLACE INTO t VALUES (1)", false, false, "REPLACE"},
	{MySQL, "LOAD DATA INFILE 'x' INTO TABLE t", false, false, "LOAD"},
	{MySQL, "HANDLER t OPEN", false, false, "HANDLER"},
	{MySQL, "FLUSH TABLES", false, false, "FLUSH"},
	{MySQL, "GRANT ALL ON *.* TO x", false, false, "GRANT"},
	{SQLite, "1", false, false, "does not start with a keyword"},

	// Empty input.
	{SQLite, "", false, false, "no statement"},
	{SQLite, " ; ;\n-- just a comment\n", false, false, "no statement"},

	// Strings, identifiers and comments hide keywords.
	{SQLite, "select 'DELETE FROM x'", true, false, ""},
	{SQLite, "select 'it''s; DROP TABLE t'", true, false, ""},
	{SQLite, "SELECT /* DROP */ 1", true, false, ""},
	{SQLite, "-- DROP\nSELECT 1", true, false, ""},
	{SQLite, "SELECT \"delete\", `update`, [drop] FROM t", true, false, ""},
	{SQLite, "SELECT 'x", false, false, "unterminated string"},
	{SQLite, "SELECT \"x", false, false, "unterminated quoted identifier"},
	{SQLite, "SELECT [x", false, false, "unterminated"},
	{SQLite, "SELECT 1 /* x", false, false, "unterminated comment"},
	{SQLite, "SELECT 1\x00; DELETE FROM t", false, false, "control character"},
	{MySQL, "SELECT 1 --\x01 '\n; DELETE FROM t; -- '", false, false, "ambiguous --"},
	{MySQL, "SELECT 1 # DROP TABLE t\n", true, false, ""},
	{Postgres, "SELECT 1 # 2", true, false, ""},
	{MySQL, "SELECT \"DROP TABLE t\"", true, false, ""},
	{MySQL, "SELECT 'it\\'s'", false, false, "with NO_BACKSLASH_ESCAPES"},
	{MySQL, "SELECT 'a\\'; DELETE FROM t; -- '", false, true, "with NO_BACKSLASH_ESCAPES"},
	{MySQL, "SELECT 'a\\\\'", true, false, ""},
	{MySQL, "SELECT \"a\\\"; DELETE FROM t; -- \"", false, true, "DELETE"},
	{MySQL, "SELECT `a\\`; DELETE FROM t; -- `", false, true, "statement 2 is DELETE"},
	{MySQL, "SELECT 1 --1", false, false, "ambiguous --"},
	{MySQL, "SELECT 1 -- comment", true, false, ""},
	{Postgres, "SELECT 'a\\'; DELETE FROM t; --'", false, true, "statement 2 is DELETE"},
	{Postgres, "SELECT 'a\\''; DELETE FROM t; --'", false, true, "standard_conforming_strings off"},
	{Postgres, "SELECT E'it\\'s'", true, false, ""},
	{Postgres, "SELECT E'a'\n'b'", false, false, "continued"},
	{Postgres, "SELECT $$DROP TABLE t$$", true, false, ""},
	{Postgres, "SELECT $fn$ '; DELETE FROM t $fn$", true, false, ""},
	{Postgres, "SELECT $x$ DROP", false, false, "unterminated dollar-quoted"},
	{Postgres, "SELECT $1, a$b FROM t", true, false, ""},
	{Postgres, "SELECT /* /* */ DELETE FROM t */ 1", true, false, ""},
	{Postgres, "SELECT /* /* */ 1; DELETE FROM t", false, false, "unterminated comment"},
	{SQLite, "SELECT /* /* */ 1; DELETE FROM t", false, true, "DELETE"},
	{MySQL, "/*! DROP TABLE t */", false, false, "executable comment"},
	{MySQL, "SELECT /*!50000 1 */", false, false, "executable comment"},
	{MySQL, "SELECT /*M! 1 */", false, false, "executable comment"},
	{Postgres, "SELECT /*! 1 */", true, false, ""},
	{MySQL, "SELECT /*+ MAX_EXECUTION_TIME(1000) */ * FROM t", true, false, ""},
	{MySQL, "SELECT /*+ \\! rm x */ 1", false, false, "optimizer hint"},
	{MySQL, "SELECT 1into @x", false, false, "ambiguous token"},
	{MySQL, "SELECT .5into @x", false, false, "INTO"},
	{MySQL, "SELECT 0x1F, 1e5, 2.5", true, false, ""},
	{Postgres, "SELECT 1into t", false, false, "INTO"},
	{SQLite, "SELECT $a(';DELETE) FROM t", true, false, ""},
	{SQLite, "SELECT :name, @v, ?1, $x::y FROM t", true, false, ""},

	// INTO, locks and data-modifying keywords inside queries.
	{Postgres, "SELECT * INTO new FROM t", false, false, "INTO"},
	{MySQL, "SELECT * FROM t INTO OUTFILE '/tmp/x'", false, false, "INTO"},
	{MySQL, "SELECT a INTO @v FROM t", false, false, "INTO"},
	{Postgres, "SELECT * FROM t FOR UPDATE", false, false, "FOR UPDATE"},
	{Postgres, "SELECT * FROM t FOR NO KEY UPDATE", false, false, "FOR NO"},
	{MySQL, "SELECT * FROM t FOR SHARE", false, false, "FOR SHARE"},
	{MySQL, "SELECT * FROM t LOCK IN SHARE MODE", false, false, "LOCK IN SHARE MODE"},
	{Postgres, "SELECT substring(a FOR 2) FROM t", true, false, ""},
	{Postgres, "WITH d AS (DELETE FROM t RETURNING *) SELECT * FROM d", false, true, "contains DELETE"},
	{Postgres, "WITH d AS (DELETE FROM t WHERE id = 1 RETURNING *) SELECT * FROM d", false, false, "contains DELETE"},
	{Postgres, "WITH x AS (SELECT 1) DELETE FROM t", false, true, "contains DELETE"},
	{Postgres, "WITH x AS (SELECT 1) UPDATE t SET a = 1 WHERE b", false, false, "UPDATE"},
	{Postgres, "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 5) SELECT n FROM r", true, false, ""},
	{Postgres, "WITH a(x) AS MATERIALIZED (SELECT 1), b(y) AS (SELECT 2) SELECT * FROM a, b", true, false, ""},
	{Postgres, "WITH a AS (SELECT 1) SELECT * FROM a, dblink('c', 'DELETE FROM t') AS (n int)", false, false, "dblink"},
	{Postgres, "SELECT * FROM generate_series(1, 3) AS g(n)", true, false, ""},

	// Functions.
	{SQLite, "SELECT writefile('/tmp/x','y')", false, false, "function writefile() can write files"},
	{SQLite, "SELECT readfile('/etc/passwd')", false, false, "readfile"},
	{SQLite, "SELECT load_extension('x')", false, false, "load_extension() loads native code"},
	{SQLite, "SELECT edit('x')", false, false, "edit"},
	{SQLite, "SELECT fts3_tokenizer('x')", false, false, "fts3_tokenizer"},
	{SQLite, "SELECT * FROM fsdir('/')", false, false, "fsdir"},
	{SQLite, "SELECT my_func()", false, false, "function my_func() is not known to be side-effect free"},
	{Postgres, "SELECT my_func()", false, false, "my_func"},
	{SQLite, "SELECT lower(name), length(name), coalesce(a, b), datetime('now'), json_extract(j, '$.a') FROM t", true, false, ""},
	{SQLite, "SELECT count (*) FROM t", true, false, ""},
	{SQLite, "SELECT \"lower\"(x)", false, false, "quoted name"},
	{SQLite, "SELECT name FROM pragma_table_info('t')", true, false, ""},
	{SQLite, "SELECT * FROM json_each('[1]')", true, false, ""},
	{Postgres, "SELECT lo_export(1, '/tmp/x')", false, false, "lo_export() writes a server file"},
	{Postgres, "SELECT pg_read_file('/etc/passwd')", false, false, "pg_read_file"},
	{Postgres, "SELECT lo_import('/etc/passwd')", false, false, "lo_import"},
	{Postgres, "SELECT lo_unlink(1)", false, false, "lo_unlink"},
	{Postgres, "SELECT pg_ls_dir('.'), pg_stat_file('x')", false, false, "pg_ls_dir"},
	{Postgres, "SELECT pg_terminate_backend(1)", false, false, "ends another session"},
	{Postgres, "SELECT pg_cancel_backend(1)", false, false, "pg_cancel_backend"},
	{Postgres, "SELECT pg_reload_conf()", false, false, "pg_reload_conf"},
	{Postgres, "SELECT pg_rotate_logfile()", false, false, "pg_rotate_logfile"},
	{Postgres, "SELECT set_config('a', 'b', false)", false, false, "set_config"},
	{Postgres, "SELECT nextval('s')", false, false, "advances a sequence"},
	{Postgres, "SELECT setval('s', 1)", false, false, "setval"},
	{Postgres, "SELECT * FROM dblink_exec('c', 'DELETE FROM t')", false, false, "runs sql over another connection"},
	{Postgres, "SELECT pg_sleep(100)", false, false, "blocks"},
	{Postgres, "SELECT version(), current_user, pg_size_pretty(pg_database_size(current_database()))", true, false, ""},
	{Postgres, "SELECT to_char(now(), 'YYYY'), date_trunc('day', now()), extract(year FROM now())", true, false, ""},
	{Postgres, "SELECT string_agg(a, ','), array_agg(b) FILTER (WHERE b > 0) FROM t", true, false, ""},
	{Postgres, "SELECT rank() OVER (PARTITION BY a ORDER BY b) FROM t", true, false, ""},
	{Postgres, "SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY a) FROM t", true, false, ""},
	{Postgres, "SELECT CAST(a AS varchar(10)), a::numeric(10, 2) FROM t", true, false, ""},
	{Postgres, "SELECT pg_catalog.lower('A')", true, false, ""},
	{Postgres, "SELECT public.lower('A')", false, false, "function public.lower()"},
	{Postgres, "SELECT x FROM t WHERE a IN (1, 2) AND EXISTS (SELECT 1)", true, false, ""},
	{MySQL, "SELECT load_file('/etc/passwd')", false, false, "load_file"},
	{MySQL, "SELECT sleep(10)", false, false, "sleep"},
	{MySQL, "SELECT benchmark(1000000, md5('x'))", false, false, "benchmark"},
	{MySQL, "SELECT get_lock('x', 1)", false, false, "get_lock"},
	{MySQL, "SELECT release_lock('x')", false, false, "release_lock"},
	{MySQL, "SELECT array_agg(x) FROM t", false, false, "array_agg"},
	{MySQL, "SELECT group_concat(a), ifnull(b, 0), if(c, 1, 2), date_format(now(), '%Y') FROM t USE INDEX (i)", true, false, ""},
	{MySQL, "SELECT replace(a, 'x', 'y'), truncate(1.5, 0) FROM t", true, false, ""},
	{MySQL, "SELECT insert('abc', 1, 1, 'x')", false, false, "insert()"},

	// Syntax words before "(" are not calls, unless they could name a
	// user-defined function in that dialect.
	{Postgres, "SELECT filter(1)", false, false, "function filter()"},
	{Postgres, "SELECT a FROM t GROUP BY CUBE (a, b)", true, false, ""},
	{Postgres, "SELECT cube(1)", false, false, "function cube()"},
	{Postgres, "SELECT match(a)", false, false, "function match()"},
	{MySQL, "SELECT * FROM t WHERE MATCH (a) AGAINST ('x' IN BOOLEAN MODE)", true, false, ""},
	{MySQL, "SELECT against(1)", false, false, "function against()"},
	{MySQL, "SELECT ilike(1)", false, false, "function ilike()"},
	{Postgres, "SELECT a ILIKE ('x%') FROM t", true, false, ""},
	{Postgres, "SELECT x::timestamptz(3) FROM t", true, false, ""},
	{Postgres, "SELECT timestamptz(3)", false, false, "timestamptz"},
	{Postgres, "SELECT a = ANY (ARRAY[1, 2]) FROM t", true, false, ""},
	{MySQL, "SELECT any(1)", false, false, "function any()"},
	{MySQL, "SELECT a FROM JSON_TABLE('[1]', '$[*]' COLUMNS (a INT PATH '$')) AS jt", true, false, ""},
	{MySQL, "SELECT 1 MEMBER OF ('[1]')", true, false, ""},
	{Postgres, "WITH a AS NOT MATERIALIZED (SELECT 1) SELECT * FROM a", true, false, ""},
	{Postgres, "SELECT now() AT TIME ZONE ('UTC')", true, false, ""},

	// EXPLAIN.
	{SQLite, "EXPLAIN SELECT 1", true, false, ""},
	{SQLite, "EXPLAIN QUERY PLAN SELECT * FROM t", true, false, ""},
	{Postgres, "EXPLAIN ANALYZE SELECT 1", true, false, ""},
	{Postgres, "EXPLAIN (ANALYZE, FORMAT JSON) SELECT 1", true, false, ""},
	{Postgres, "EXPLAIN ANALYZE DELETE FROM t", false, true, "statement 1 is DELETE (under EXPLAIN ANALYZE, which runs it)"},
	{Postgres, "EXPLAIN (ANALYZE true) DELETE FROM t", false, true, "EXPLAIN ANALYZE"},
	{Postgres, "EXPLAIN DELETE FROM t", false, false, "statement 1 is DELETE (under EXPLAIN)"},
	{Postgres, "EXPLAIN SELECT nextval('s')", false, false, "nextval"},
	{MySQL, "EXPLAIN FORMAT=JSON SELECT * FROM t", true, false, ""},
	{MySQL, "EXPLAIN ANALYZE DELETE FROM t", false, true, "DELETE"},
	{MySQL, "DESCRIBE t", true, false, ""},
	{MySQL, "DESC t", true, false, ""},
	{MySQL, "DESCRIBE SELECT 1", true, false, ""},
	{MySQL, "EXPLAIN FOR CONNECTION 4", true, false, ""},
	{Postgres, "DESCRIBE t", false, false, "DESCRIBE"},
	{Postgres, "EXPLAIN", false, false, "without a statement"},

	// SQLite pragmas.
	{SQLite, "PRAGMA table_info(t)", true, false, ""},
	{SQLite, "PRAGMA main.table_info('t')", true, false, ""},
	{SQLite, "PRAGMA integrity_check", true, false, ""},
	{SQLite, "PRAGMA user_version", true, false, ""},
	{SQLite, "PRAGMA user_version = 5", false, false, "with = changes a setting"},
	{SQLite, "PRAGMA user_version(5)", false, false, "changes a setting"},
	{SQLite, "PRAGMA journal_mode=WAL", false, false, "changes a setting"},
	{SQLite, "PRAGMA wal_checkpoint", false, false, "not known to be read-only"},
	{SQLite, "PRAGMA optimize", false, false, "optimize"},
	{Postgres, "PRAGMA table_info(t)", false, false, "PRAGMA"},

	// Dot-commands.
	{SQLite, ".tables", false, false, "dot-command .tables"},
	{SQLite, "SELECT 1;\n.shell rm -rf /", false, false, "dot-command .shell"},
	{SQLite, "SELECT 1\n.shell rm -rf /", false, false, "dot-command .shell"},
	{SQLite, ".shell echo it's", false, false, "dot-command .shell"},
	{SQLite, "SELECT t.a, 1.5, .5 FROM t", true, false, ""},

	// Backslash meta-commands and client commands.
	{Postgres, "\\! rm x", false, false, "backslash meta-command \\! runs a shell command"},
	{Postgres, "SELECT 1 \\g /tmp/out", false, false, "\\g"},
	{Postgres, "\\copy t TO 'x'", false, false, "\\copy"},
	{Postgres, "\\o /tmp/x", false, false, "writes a file"},
	{Postgres, "\\dt", false, false, "backslash meta-command \\dt"},
	{Postgres, "SELECT '\\! rm x'", true, false, ""},
	{MySQL, "system rm x", false, false, "client command system runs a shell command"},
	{MySQL, "SELECT 1; SYSTEM rm x", false, false, "client command system"},
	{MySQL, "source /tmp/x.sql", false, false, "runs a file"},
	{MySQL, "SELECT 1; \\! rm x", false, false, "client command \\! runs a shell command"},
	{MySQL, "tee /tmp/x", false, false, "tee"},
	{MySQL, "delimiter //", false, false, "delimiter"},
	{MySQL, "SELECT 1\\G", true, false, ""},
	{MySQL, "SELECT 1\\g SELECT 2", true, false, "2 read-only"},
	{MySQL, "SELECT \\N", true, false, ""},
	{MySQL, "SELECT '\\! x'", true, false, ""},
	{MySQL, "SELECT status FROM t", true, false, ""},
	{MySQL, "USE db; SELECT 1", true, false, ""},
	{MySQL, "USE db", false, false, "only transaction control"},
	{MySQL, "USE db x", false, false, "USE"},

	// Transaction control.
	{SQLite, "BEGIN; SELECT 1; COMMIT", true, false, ""},
	{MySQL, "START TRANSACTION READ ONLY; SELECT 1; ROLLBACK", true, false, ""},
	{Postgres, "BEGIN; COMMIT", false, false, "only transaction control"},
	{SQLite, "BEGIN IMMEDIATE; SELECT 1; COMMIT", false, false, "BEGIN with IMMEDIATE"},
	{MySQL, "BEGIN NOT ATOMIC DELETE FROM t; END", false, false, "BEGIN"},
	{Postgres, "BEGIN; DELETE FROM t; COMMIT", false, true, "DELETE"},
	{Postgres, "ROLLBACK TO SAVEPOINT a; SELECT 1", false, false, "ROLLBACK"},

	// Destructive.
	{SQLite, "DELETE FROM users", false, true, "statement 1 is DELETE"},
	{SQLite, "DELETE FROM users WHERE id=1", false, false, ""},
	{SQLite, "DROP TABLE t", false, true, "DROP"},
	{MySQL, "DROP DATABASE d", false, true, ""},
	{MySQL, "TRUNCATE TABLE t", false, true, ""},
	{Postgres, "UPDATE t SET a = 1", false, true, ""},
	{Postgres, "UPDATE t SET a = (SELECT b FROM u WHERE u.id = 1)", false, true, ""},
	{Postgres, "UPDATE t SET a = 1 WHERE id = 1", false, false, ""},
	{Postgres, "ALTER TABLE t DROP COLUMN a", false, true, ""},
	{Postgres, "ALTER TABLE t ADD COLUMN a int", false, false, ""},
	{MySQL, "INSERT INTO t VALUES (1) ON DUPLICATE KEY UPDATE a = 1", false, false, ""},
	{Postgres, "SELECT 1; DROP TABLE t; SELECT 2", false, true, "statement 2 is DROP"},
	{SQLite, "DROP TABLE t; SELECT 'x", false, true, "DROP"},
	{MySQL, "/*! DROP TABLE t */", false, false, ""},

	// Limits.
	{SQLite, "SELECT " + strings.Repeat("(", 100000) + "1" + strings.Repeat(")", 100000), true, false, ""},
	{Postgres, strings.Repeat("(DELETE FROM t WHERE a IN ", 40000), false, false, "DELETE"},
	{Postgres, strings.Repeat("(DELETE FROM t ", 40000), false, true, "DELETE"},
	// Unbalanced parentheses are a syntax error: nothing runs.
	{Postgres, strings.Repeat("WITH a AS (", 40000) + "SELECT 1", true, false, ""},
	{SQLite, "SELECT '" + strings.Repeat("x", maxSQL) + "'", false, false, "sql text too large"},
	{Dialect(9), "SELECT 1", false, false, "unknown sql dialect"},
}

func TestInspectSQL(t *testing.T) {
	for _, c := range sqlCases {
		got := InspectSQL(c.d, c.sql)
		if got.ReadOnly != c.readOnly || got.Destructive != c.destructive || got.REPL ||
			!strings.Contains(got.Detail, c.detail) {
			t.Errorf("InspectSQL(%v, %q) = %+v; want read-only %v, destructive %v, detail ~ %q",
				c.d, clip(c.sql), got, c.readOnly, c.destructive, c.detail)
		}
		if got.Detail == "" {
			t.Errorf("InspectSQL(%v, %q): empty detail", c.d, clip(c.sql))
		}
	}
}

func TestDetailsAreLowercase(t *testing.T) {
	for _, c := range sqlCases {
		d := InspectSQL(c.d, c.sql).Detail
		if d != "" && d[0] >= 'A' && d[0] <= 'Z' {
			t.Errorf("InspectSQL(%v, %q).Detail = %q starts upper-case", c.d, clip(c.sql), d)
		}
	}
}

func TestClient(t *testing.T) {
	for prog, want := range map[string]Dialect{"sqlite3": SQLite, "psql": Postgres, "mysql": MySQL, "mariadb": MySQL} {
		if d, ok := Client(prog); !ok || d != want {
			t.Errorf("Client(%q) = %v, %v; want %v, true", prog, d, ok, want)
		}
	}
	for _, prog := range []string{"sqlite", "/usr/bin/psql", "pg_dump", "mysqldump", ""} {
		if _, ok := Client(prog); ok {
			t.Errorf("Client(%q) is supported; want not", prog)
		}
	}
}

func TestDialectString(t *testing.T) {
	if SQLite.String() != "sqlite" || Postgres.String() != "postgres" || MySQL.String() != "mysql" || Dialect(7).String() != "Dialect(7)" {
		t.Error("Dialect.String is wrong")
	}
}
