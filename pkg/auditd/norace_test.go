//go:build !race

package auditd_test

const raceEnabled = false
