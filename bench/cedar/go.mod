module github.com/govkit/govkit/bench/cedar

go 1.26.8

require (
	github.com/cedar-policy/cedar-go v1.9.0
	github.com/govkit/govkit v0.0.0
)

require (
	github.com/go-json-experiment/json v0.0.0-20260820222146-c27c302e5fc3 // indirect
	golang.org/x/exp v0.0.0-20220921023135-46d9e7742f1e // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
)

replace github.com/govkit/govkit => ../..
