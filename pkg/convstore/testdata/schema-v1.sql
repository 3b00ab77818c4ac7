-- A conversation database as schema version 1 wrote it (the first gate
-- serve): TestOpenVersion1 opens it with the current binary, which must
-- migrate it and read everything back. Never edit; add a file per version.
CREATE TABLE schema_migrations (
	version    INTEGER PRIMARY KEY,
	applied_at TEXT NOT NULL
);
INSERT INTO schema_migrations VALUES (1, '2025-03-01T12:00:00.000000000Z');
CREATE TABLE conversations (
	id             TEXT PRIMARY KEY,
	parent_id      TEXT NOT NULL DEFAULT '',
	continued_from TEXT NOT NULL DEFAULT '',
	subagent       INTEGER NOT NULL DEFAULT 0,
	cwd            TEXT NOT NULL,
	model          TEXT NOT NULL,
	mode           TEXT NOT NULL,
	state          TEXT NOT NULL,
	created_at     TEXT NOT NULL,
	updated_at     TEXT NOT NULL,
	snapshot       BLOB NOT NULL
);
CREATE INDEX conversations_listing ON conversations (subagent, created_at);
CREATE INDEX conversations_parent  ON conversations (parent_id, created_at) WHERE parent_id != '';
CREATE TABLE messages (
	conversation_id TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
	seq             INTEGER NOT NULL,
	role            TEXT NOT NULL,
	at              TEXT NOT NULL,
	body            BLOB NOT NULL,
	PRIMARY KEY (conversation_id, seq)
) WITHOUT ROWID;
CREATE TABLE attachments (
	ref        TEXT PRIMARY KEY,
	media_type TEXT NOT NULL,
	size       INTEGER NOT NULL,
	created_at TEXT NOT NULL,
	data       BLOB NOT NULL
) WITHOUT ROWID;
INSERT INTO conversations VALUES ('c-old', '', '', 0, '/srv/work/c-old', 'qwen3-8b', 'restricted', 'tool_executing',
	'2025-03-01T12:00:00.000000000Z', '2025-03-01T12:00:05.000000000Z', CAST('{"id":"c-old","state":"tool_executing"}' AS BLOB));
INSERT INTO conversations VALUES ('s-old', 'c-old', '', 1, '/srv/work/c-old', 'qwen3-8b', 'restricted', 'llm_requesting',
	'2025-03-01T12:00:03.000000000Z', '2025-03-01T12:00:04.000000000Z', CAST('{"id":"s-old"}' AS BLOB));
INSERT INTO messages VALUES ('c-old', 1, 'user', '2025-03-01T12:00:01.000000000Z', CAST('{"seq":1,"role":"user","text":"list the files"}' AS BLOB));
INSERT INTO messages VALUES ('c-old', 2, 'assistant', '2025-03-01T12:00:02.000000000Z', CAST('{"seq":2,"role":"assistant","tool_calls":[{"id":"t1","name":"bash","args":{"command":"ls"}}]}' AS BLOB));
INSERT INTO attachments VALUES ('att_2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824', 'image/png', 5,
	'2025-03-01T12:00:01.000000000Z', CAST('hello' AS BLOB));
