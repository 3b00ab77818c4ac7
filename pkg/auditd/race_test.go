//go:build race

package auditd_test

const raceEnabled = true
