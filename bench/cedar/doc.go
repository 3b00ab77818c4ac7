// Package cedar compares govkit's policy engine with cedar-go on an
// equivalent ten-policy set (issue 20). It is a module of its own so that
// cedar-go is never a dependency of govkit: run it with make bench-cedar.
package cedar
