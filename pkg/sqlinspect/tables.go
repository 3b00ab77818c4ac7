package sqlinspect

import "strings"

// The rule tables. Everything not listed fails closed: an unknown statement,
// function, pragma or option is never read-only (DESIGN §4).

func set(words string) map[string]bool {
	m := make(map[string]bool)
	for _, w := range strings.Fields(words) {
		m[w] = true
	}
	return m
}

// readHeads start query statements. DESCRIBE/DESC (MySQL) and EXPLAIN are
// unwrapped first; TABLE t is Postgres' and MySQL's SELECT * FROM t.
var readHeads = set("select with values table show")

// dataModifying keywords never appear in a query, except as what they
// modify: a Postgres CTE can INSERT, UPDATE, DELETE or MERGE.
var dataModifying = set("insert update delete merge upsert replace")

// statementKeywords start a statement. After EXPLAIN/DESCRIBE, a word that
// is not one of these is MySQL's table form: DESCRIBE tbl.
var statementKeywords = set(`select with values table show explain describe desc pragma
	insert update delete merge upsert replace
	attach detach vacuum copy create drop alter truncate grant revoke set reset
	begin start commit end rollback savepoint release lock unlock call do execute
	prepare deallocate listen notify unlisten load handler install uninstall flush
	kill shutdown reindex analyze analyse cluster refresh comment security import
	checkpoint discard declare fetch move close optimize repair check checksum
	rename purge change reset restart clone help use`)

// syntax says when a word followed by "(" is SQL syntax rather than a call:
// IN (…), OVER (…), AS (…), WITHIN GROUP (…), CAST(x AS varchar(9)). Reserved
// words cannot name a function, so they are syntax anywhere in the dialects
// listed; unreserved ones (Postgres' FILTER, CUBE, …) could be the name of a
// user-defined function and are syntax only after the token that introduces
// them. A word after "::" or AS is a type modifier or alias column list.
type syntaxRule struct {
	reserved int    // dialects where the word is always syntax
	after    string // previous tokens after which it is syntax; ' stands for a string
}

var nonCall = func() map[string]syntaxRule {
	m := make(map[string]syntaxRule)
	for w := range set(`all and as between by case cast collate distinct else except exists for
		from group having in intersect interval is join like limit not on or order row
		select then to union using values when where with array
		char character varchar nchar decimal dec numeric float real double int integer
		bigint smallint bit binary time timestamp`) {
		m[w] = syntaxRule{reserved: sq | pg | my}
	}
	for w, r := range map[string]syntaxRule{
		"any": {pg, "= < > !"}, "some": {pg, "= < > !"},
		"lateral": {pg | my, ""}, "window": {pg | my, ""},
		"only": {pg, ""}, "offset": {pg, ""}, "ilike": {pg, ""}, "overlaps": {pg, ""}, "placing": {pg, ""},
		"over": {my, ")"}, "filter": {0, ")"}, "within": {0, ")"}, "against": {0, ")"},
		"materialized": {0, "as not"}, "zone": {0, "time"}, "sets": {0, "grouping"},
		"cube": {0, "by"}, "rollup": {0, "by"}, "of": {0, "member"}, "columns": {0, "'"},
		"match": {my, ""}, "index": {my, ""}, "key": {my, ""}, "partition": {my, ""},
		"regexp": {my, ""}, "rlike": {my, ""}, "xor": {my, ""}, "div": {my, ""},
	} {
		m[w] = r
	}
	return m
}()

// isSyntax reports whether toks[i], followed by "(", is syntax in d.
func isSyntax(d Dialect, toks []token, i int) bool {
	if i > 0 && (toks[i-1].is(tPunct, "::") || toks[i-1].is(tWord, "as")) {
		return true
	}
	r, ok := nonCall[toks[i].text]
	if !ok {
		return false
	}
	if r.reserved&(1<<d) != 0 {
		return true
	}
	if i == 0 || r.after == "" {
		return false
	}
	prev := toks[i-1]
	if prev.kind == tString {
		return strings.Contains(r.after, "'")
	}
	for _, a := range strings.Fields(r.after) {
		if prev.text == a && prev.kind != tString && prev.kind != tQuoted {
			return true
		}
	}
	return false
}

const (
	sq = 1 << SQLite
	pg = 1 << Postgres
	my = 1 << MySQL
)

// safeFunctions are built-in functions without side effects, per dialect: a
// name that is built into one dialect can be a user-defined function (which
// may write) in another, so each name lists where it is built in.
var safeFunctions = functionSet(map[int]string{
	sq | pg | my: `abs avg coalesce count lower upper ltrim rtrim trim max min sum nullif
		replace round substr substring length concat concat_ws format date
		row_number rank dense_rank percent_rank cume_dist ntile lag lead
		first_value last_value nth_value
		ceil ceiling floor exp ln log log10 mod pi power sqrt sign radians degrees
		sin cos tan asin acos atan atan2`,
	sq | my: `hex unhex ifnull instr quote char group_concat log2 pow time if
		json_extract json_object json_array json_type json_valid json_quote
		json_set json_insert json_replace json_remove json_pretty`,
	sq | pg: `random trunc generate_series string_agg json_each`,
	pg | my: `greatest least char_length character_length octet_length bit_length
		now version md5 left right lpad rpad repeat reverse position extract
		regexp_replace regexp_like regexp_substr regexp_instr ascii
		current_user session_user bit_and bit_or stddev stddev_pop stddev_samp
		variance var_pop var_samp grouping json_array_length`,
	sq: `iif printf typeof unicode randomblob zeroblob total glob likely unlikely
		likelihood changes total_changes last_insert_rowid sqlite_version
		sqlite_source_id sqlite_compileoption_used sqlite_compileoption_get
		datetime julianday strftime unixepoch timediff octet_length
		json jsonb jsonb_array jsonb_extract jsonb_insert jsonb_object json_patch
		jsonb_patch jsonb_remove jsonb_replace jsonb_set json_error_position
		json_group_array jsonb_group_array json_group_object jsonb_group_object
		json_tree`,
	pg: `to_char to_date to_timestamp to_number to_hex date_trunc date_part date_bin
		age clock_timestamp statement_timestamp transaction_timestamp timeofday
		make_date make_time make_timestamp make_timestamptz make_interval
		justify_days justify_hours justify_interval isfinite
		strpos split_part initcap btrim translate starts_with chr encode decode
		quote_ident quote_literal quote_nullable regexp_match regexp_matches
		regexp_split_to_array regexp_split_to_table regexp_count
		sha224 sha256 sha384 sha512 cbrt div width_bucket gen_random_uuid
		array_agg json_agg jsonb_agg json_object_agg jsonb_object_agg bool_and
		bool_or every corr covar_pop covar_samp percentile_cont percentile_disc mode
		array_length array_upper array_lower array_position array_positions
		array_to_string string_to_array array_append array_prepend array_cat
		array_remove array_replace cardinality array_dims array_ndims unnest
		generate_subscripts
		json_build_object jsonb_build_object json_build_array jsonb_build_array
		to_json to_jsonb row_to_json array_to_json jsonb_array_length
		json_extract_path json_extract_path_text jsonb_extract_path
		jsonb_extract_path_text jsonb_each json_each_text jsonb_each_text
		json_object_keys jsonb_object_keys json_array_elements jsonb_array_elements
		json_array_elements_text jsonb_array_elements_text json_typeof jsonb_typeof
		jsonb_pretty jsonb_set jsonb_insert json_strip_nulls jsonb_strip_nulls
		jsonb_path_query jsonb_path_exists jsonb_path_match jsonb_path_query_array
		jsonb_path_query_first
		current_database current_schema current_schemas current_setting
		pg_backend_pid pg_postmaster_start_time pg_conf_load_time pg_is_in_recovery
		inet_server_addr inet_server_port inet_client_addr inet_client_port
		pg_current_wal_lsn pg_blocking_pids pg_encoding_to_char pg_relation_filepath
		pg_size_pretty pg_size_bytes pg_database_size pg_relation_size
		pg_total_relation_size pg_table_size pg_indexes_size pg_column_size
		pg_get_viewdef pg_get_indexdef pg_get_constraintdef pg_get_functiondef
		pg_get_triggerdef pg_get_expr pg_get_userbyid pg_get_serial_sequence
		pg_get_keywords pg_typeof format_type obj_description col_description
		shobj_description has_table_privilege has_schema_privilege
		has_database_privilege has_column_privilege has_function_privilege
		pg_has_role to_regclass to_regtype pg_table_is_visible
		text int2 int4 int8 float4 float8 bool`,
	my: `lcase ucase isnull locate field find_in_set elt make_set ord bin oct conv
		strcmp substring_index space soundex crc32 to_base64 from_base64 sha sha1
		sha2 rand truncate convert uuid uuid_to_bin bin_to_uuid
		inet_aton inet_ntoa inet6_aton inet6_ntoa is_ipv4 is_ipv6
		database schema user system_user connection_id last_insert_id row_count
		found_rows charset collation coercibility any_value bit_xor std
		json_arrayagg json_objectagg
		curdate curtime current_date current_time current_timestamp localtime
		localtimestamp sysdate utc_date utc_time utc_timestamp
		date_format time_format str_to_date date_add date_sub adddate subdate
		addtime subtime datediff timediff timestampdiff timestampadd from_unixtime
		unix_timestamp from_days to_days to_seconds sec_to_time time_to_sec last_day
		makedate maketime period_add period_diff convert_tz get_format
		year month day dayofmonth dayofweek dayofyear dayname monthname hour minute
		second microsecond week weekday weekofyear yearweek quarter
		json_unquote json_contains json_contains_path json_keys json_length
		json_depth json_search json_merge_patch json_merge_preserve json_table
		json_overlaps json_value json_array_append json_array_insert
		json_storage_size`,
})

func functionSet(groups map[int]string) map[string]int {
	m := make(map[string]int)
	for mask, names := range groups {
		for _, n := range strings.Fields(names) {
			m[n] |= mask
		}
	}
	return m
}

func safeFunction(d Dialect, name string) bool { return safeFunctions[name]&(1<<d) != 0 }

// dangerousFunctions get a precise detail; they are never allowed.
var dangerousFunctions = map[string]struct {
	mask int
	why  string
}{
	"writefile":            {sq, "can write files"},
	"readfile":             {sq, "reads files"},
	"edit":                 {sq, "runs an editor"},
	"load_extension":       {sq, "loads native code"},
	"fts3_tokenizer":       {sq, "can load native code"},
	"lo_export":            {pg, "writes a server file"},
	"lo_import":            {pg, "reads a server file into the database"},
	"lo_unlink":            {pg, "deletes a large object"},
	"pg_read_file":         {pg, "reads server files"},
	"pg_read_binary_file":  {pg, "reads server files"},
	"pg_ls_dir":            {pg, "lists server directories"},
	"pg_stat_file":         {pg, "inspects server files"},
	"pg_terminate_backend": {pg, "ends another session"},
	"pg_cancel_backend":    {pg, "cancels another session's query"},
	"pg_reload_conf":       {pg, "reloads the server configuration"},
	"pg_rotate_logfile":    {pg, "rotates the server log"},
	"set_config":           {pg, "changes a setting"},
	"nextval":              {pg, "advances a sequence"},
	"setval":               {pg, "sets a sequence"},
	"pg_sleep":             {pg, "blocks the session"},
	"pg_sleep_for":         {pg, "blocks the session"},
	"pg_sleep_until":       {pg, "blocks the session"},
	"load_file":            {my, "reads server files"},
	"sleep":                {my, "blocks the session"},
	"benchmark":            {my, "blocks the session"},
	"get_lock":             {my, "takes a named lock"},
	"release_lock":         {my, "releases a named lock"},
}

func dangerousFunction(d Dialect, name string) string {
	if f, ok := dangerousFunctions[name]; ok && f.mask&(1<<d) != 0 {
		return f.why
	}
	if d == Postgres && strings.HasPrefix(name, "dblink") {
		return "runs sql over another connection"
	}
	return ""
}

type pragmaKind uint8

const (
	pragmaUnknown pragmaKind = iota
	pragmaQuery              // only reports, with or without an argument
	pragmaSetting            // reports without an argument, sets with one
)

var sqlitePragmas = func() map[string]pragmaKind {
	m := make(map[string]pragmaKind)
	for n := range set(`table_info table_xinfo table_list index_info index_xinfo index_list
		foreign_key_list foreign_key_check integrity_check quick_check`) {
		m[n] = pragmaQuery
	}
	for n := range set(`application_id auto_vacuum automatic_index busy_timeout cache_size
		cache_spill cell_size_check checkpoint_fullfsync collation_list compile_options
		data_version database_list defer_foreign_keys encoding foreign_keys
		freelist_count fullfsync function_list hard_heap_limit ignore_check_constraints
		journal_mode journal_size_limit legacy_alter_table locking_mode max_page_count
		mmap_size module_list page_count page_size pragma_list query_only
		read_uncommitted recursive_triggers reverse_unordered_selects schema_version
		secure_delete soft_heap_limit synchronous temp_store threads trusted_schema
		user_version wal_autocheckpoint`) {
		m[n] = pragmaSetting
	}
	return m
}()

// psqlMeta details the psql meta-commands that do more than print.
var psqlMeta = map[string]string{
	`\!`: "runs a shell command", `\o`: "writes a file", `\out`: "writes a file",
	`\w`: "writes a file", `\write`: "writes a file", `\copy`: "copies between a file and a table",
	`\g`: "can write a file or pipe", `\gexec`: "runs query results as sql",
	`\i`: "runs a file", `\ir`: "runs a file", `\include`: "runs a file",
	`\e`: "runs an editor", `\edit`: "runs an editor", `\ef`: "runs an editor", `\ev`: "runs an editor",
	`\lo_export`: "writes a file", `\lo_import`: "reads a file into the database",
	`\lo_unlink`: "deletes a large object", `\setenv`: "changes the environment",
}

// mysqlCommands are the mysql client's named commands, recognised at the
// start of a statement (USE is handled as a statement).
var mysqlCommands = map[string]string{
	"system": "runs a shell command", "source": "runs a file", "tee": "writes a file",
	"pager": "runs a program", "edit": "runs an editor", "connect": "reconnects",
	"delimiter": "changes how statements are split", "ssl_session_data_print": "writes a file",
	"charset": "", "clear": "", "ego": "", "exit": "", "go": "", "help": "", "nopager": "",
	"notee": "", "nowarning": "", "print": "", "prompt": "", "quit": "", "rehash": "",
	"resetconnection": "", "status": "", "warnings": "", "query_attributes": "",
}

// mysqlShortCommands details the backslash forms that do more than print.
var mysqlShortCommands = map[string]string{
	`\!`: "runs a shell command", `\.`: "runs a file", `\T`: "writes a file",
	`\P`: "runs a program", `\e`: "runs an editor", `\r`: "reconnects",
	`\d`: "changes how statements are split", `\u`: "changes the database",
}
