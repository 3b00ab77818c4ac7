package intent

// Code is a stable machine reason code (DESIGN §3): logic branches on codes,
// never on details. Every code is listed in Codes and in the README.
type Code string

const (
	// Fail-closed input and syntax findings.
	CodeParseError       Code = "PARSE_ERROR"
	CodeInputTooLarge    Code = "INPUT_TOO_LARGE"
	CodeNestingTooDeep   Code = "NESTING_TOO_DEEP"
	CodeControlCharacter Code = "CONTROL_CHARACTER"
	CodeNonASCIICommand  Code = "NON_ASCII_COMMAND"
	CodeDynamicCommand   Code = "DYNAMIC_COMMAND"
	CodeANSICQuoting     Code = "ANSI_C_QUOTED_COMMAND"
	CodeQuotedContinue   Code = "QUOTED_LINE_CONTINUATION"
	CodeArithmetic       Code = "ARITHMETIC_EXPANSION"
	CodeEval             Code = "EVAL"
	CodeInlineCode       Code = "INLINE_CODE"
	CodePipeToShell      Code = "PIPE_TO_SHELL"
	CodePathCommand      Code = "PATH_COMMAND"
	CodeUnknownCommand   Code = "UNKNOWN_COMMAND"
	CodeUnsafeAssignment Code = "UNSAFE_ASSIGNMENT"

	// Known writes.
	CodeSudo            Code = "SUDO"
	CodeOutputRedirect  Code = "OUTPUT_REDIRECT"
	CodeWriteCommand    Code = "WRITE_COMMAND"
	CodeWriteSubcommand Code = "WRITE_SUBCOMMAND"
	CodeWriteOption     Code = "WRITE_OPTION"
	CodeRunsProgram     Code = "RUNS_PROGRAM"
	CodeHTTPWrite       Code = "HTTP_WRITE"
	CodeSQLWrite        Code = "SQL_WRITE"
	CodeDestructive     Code = "DESTRUCTIVE"

	// Git configuration.
	CodeGitConfigOverride  Code = "GIT_CONFIG_OVERRIDE"
	CodeGitConfigRisk      Code = "GIT_CONFIG_RISK"
	CodeGitConfigUnchecked Code = "GIT_CONFIG_UNCHECKED"

	// Read-only, but only conditionally.
	CodeGitConfigDependent Code = "GIT_CONFIG_DEPENDENT"
	CodeSQLReadOnly        Code = "SQL_READ_ONLY"

	// Termination (seed 000 NonInteractiveOnly).
	CodeTTYFlag         Code = "TTY_FLAG"
	CodePager           Code = "PAGER"
	CodeUnboundedStream Code = "UNBOUNDED_STREAM"
	CodeInteractiveREPL Code = "INTERACTIVE_REPL"
)

// CodeInfo documents one reason code.
type CodeInfo struct {
	Code    Code
	Meaning string
}

// Codes lists every reason code classify can emit, in documentation order.
var Codes = []CodeInfo{
	{CodeParseError, "the command is not valid bash; it is never read-only"},
	{CodeInputTooLarge, "the command exceeds the size limit"},
	{CodeNestingTooDeep, "substitutions or wrappers nest deeper than the limit"},
	{CodeControlCharacter, "a control character (CR, NUL, ESC, …) that terminals and shells disagree on"},
	{CodeNonASCIICommand, "a command word with non-ASCII characters (look-alike names)"},
	{CodeDynamicCommand, "the program name comes from an expansion ($cmd, $(…)) and cannot be known"},
	{CodeANSICQuoting, "ANSI-C quoting ($'…') in a command word"},
	{CodeQuotedContinue, "a backslash-newline inside double quotes"},
	{CodeArithmetic, "arithmetic evaluation, which can run a[$(cmd)] subscripts"},
	{CodeEval, "eval, source or . run text that cannot be inspected"},
	{CodeInlineCode, "an interpreter given inline code (python -c, node -e, perl -e, …)"},
	{CodePipeToShell, "output piped into a shell or interpreter"},
	{CodePathCommand, "a program given by path is not the trusted program of that name"},
	{CodeUnknownCommand, "a program classify does not know; unknown is never read-only"},
	{CodeUnsafeAssignment, "a variable assignment that can change what runs (LD_PRELOAD, PATH, GIT_*, …)"},
	{CodeSudo, "runs with elevated privileges"},
	{CodeOutputRedirect, "redirects output into a file"},
	{CodeWriteCommand, "a program that changes the system (rm, mv, chmod, …)"},
	{CodeWriteSubcommand, "a subcommand that changes state (git push, kubectl apply, systemctl restart, …)"},
	{CodeWriteOption, "an option that makes a dual-use tool write (sed -i, sort -o, find -delete, curl -o, …)"},
	{CodeRunsProgram, "the tool runs another program (find -exec, awk system(), sed e, rg --pre, …)"},
	{CodeHTTPWrite, "an HTTP request that sends data or uses a non-GET method"},
	{CodeSQLWrite, "SQL that is not provably read-only, or a client meta-command"},
	{CodeDestructive, "deletes or overwrites data, or takes a service down"},
	{CodeGitConfigOverride, "git -c / --config-env can set options that run programs"},
	{CodeGitConfigRisk, "the repository's git config sets an option (or has a hook) that runs a program"},
	{CodeGitConfigUnchecked, "--cwd was given but the repository this git command uses could not be checked"},
	{CodeGitConfigDependent, "read-only unless repository config or hooks run code (core.fsmonitor, textconv, filters, pagers); --cwd checks them"},
	{CodeSQLReadOnly, "every SQL statement was inspected and is read-only"},
	{CodeTTYFlag, "allocates a terminal (-t/-it) and waits for input"},
	{CodePager, "opens a pager or an editor"},
	{CodeUnboundedStream, "follows or refreshes forever (tail -f, watch, top, ping without -c)"},
	{CodeInteractiveREPL, "starts an interactive shell or client with no command to run"},
}
