//go:build !(linux || darwin || freebsd)

package sqlite

// canWrite cannot ask the kernel here; the appender's check at open
// (sqlite3_db_readonly) still refuses a database SQLite cannot write.
func canWrite(string) error { return nil }
