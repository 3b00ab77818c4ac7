package intent

import (
	"strings"
	"sync"

	"github.com/govkit/govkit/pkg/getopt"
)

// rules maps a bare program name to its rule. Programs not listed are
// write_or_unknown (seed 000 phase 5: conservative fallback).
var rules map[string]rule

// argSafe lists programs whose arguments can never make them write or run
// forever, so appended arguments (xargs) and expansions are harmless.
var argSafe = map[string]bool{}

// rulesOnce builds the rule tables on first use (New), not at package
// init: a binary that imports pkg/intent but classifies nothing in a given
// process — gate's sandboxed child, re-executed only to confine itself and
// exec its command — must not pay for them (issue 15: gate's overhead).
var rulesOnce sync.Once

func loadRules() { rulesOnce.Do(registerRules) }

func registerRules() {
	rules = map[string]rule{}
	// Read-only by construction (seed 000 phase 3; P-54): builtins that
	// print their operands or the shell's state. Every other read-only
	// program is a tool described by its options (tools_*.go, issue 14).
	readOnly("echo", "true", "false", ":", "type", "expr", "dirs", "times", "shopt", "help")

	// Known writes (seed 000 phases 2–3; P-52, P-53).
	writes(RiskHighWrite, "changes permissions or ownership", "chmod", "chown", "chgrp", "chattr", "setfacl")
	writes(RiskHighWrite, "changes system configuration", "umount", "swapon", "swapoff", "modprobe",
		"insmod", "rmmod", "useradd", "usermod", "groupadd", "passwd", "chpasswd", "visudo",
		"nft", "update-alternatives", "ldconfig", "depmod", "setenforce", "hwclock",
		"timedatectl", "hostnamectl", "localectl", "loginctl", "chsh", "chfn", "tc", "ethtool")
	writes(RiskMediumWrite, "creates, moves or copies files", "mv", "cp", "ln", "touch", "mkdir", "mknod",
		"mkfifo", "install", "rsync", "scp", "split", "csplit", "patch", "zip", "7z", "ar", "cpio",
		"mktemp", "link", "unlink")
	writes(RiskMediumWrite, "builds or runs project code", "make", "cmake", "ninja", "cargo", "mvn",
		"gradle", "npx", "ansible", "ansible-playbook", "kustomize")
	writes(RiskMediumWrite, "sends data over the network", "nc", "ncat", "netcat", "socat", "telnet",
		"mail", "sendmail", "ftp", "lftp")
	destroys("deletes files", "rm", "rmdir", "shred", "srm", "wipe")
	destroys("overwrites data", "truncate", "fallocate")
	destroys("shuts the system down", "shutdown", "reboot", "poweroff", "halt")
	destroys("destroys a file system or partition table", "mkfs", "mke2fs", "mkswap", "fdisk", "sfdisk",
		"gdisk", "sgdisk", "parted", "wipefs", "dmsetup", "cryptsetup", "blkdiscard")
	destroys("deletes a user or group", "userdel", "groupdel")
	privilege("sudo", "su", "doas", "pkexec", "runuser", "sg", "newgrp", "chroot", "nsenter", "unshare")
	// eval, source and . run text nobody has seen (DESIGN §4). trap, alias,
	// hash, enable and friends change what later commands do: unknown.
	for _, n := range []string{"eval", "source", "."} {
		rules[n] = evalRule
	}
	for _, fs := range []string{"ext2", "ext3", "ext4", "xfs", "vfat", "fat", "btrfs", "ntfs", "exfat"} {
		rules["mkfs."+fs] = rules["mkfs"]
	}
	registerTextRules()
	registerSystemRules()
	registerWrapperRules()
	registerShellRules()
	registerGitRules()
	registerClusterRules()
	registerPackageRules()
	registerNetworkRules()
	for _, register := range toolSets {
		register()
	}
}

func readOnly(names ...string) {
	for _, n := range names {
		rules[n] = func(*call) {}
		argSafe[n] = true
	}
}

func writes(risk Risk, what string, names ...string) {
	for _, n := range names {
		rules[n] = func(c *call) {
			c.a.writes(CodeWriteCommand, risk, c.name+" "+what)
		}
	}
}

func destroys(what string, names ...string) {
	for _, n := range names {
		rules[n] = func(c *call) {
			detail := c.name + " " + what
			c.a.writes(CodeWriteCommand, RiskHighWrite, detail)
			c.a.destroys(detail)
		}
	}
}

// privilege: sudo and friends are always writes (P-51), and their inner
// command is classified too so that sudo rm -rf / is still destructive.
func privilege(names ...string) {
	for _, n := range names {
		rules[n] = func(c *call) {
			c.a.writes(CodeSudo, RiskHighWrite, c.name+" runs a command with other privileges")
			if c.name == "sudo" || c.name == "doas" {
				p := c.parse(sudoSpec)
				c.inner(c.fromOperand(p, 0), stmtCtx{})
			}
		}
	}
}

var sudoSpec = getopt.New("AbEeHhiKklnPSsVvBg:p:r:t:U:u:C:D:R:T:a:c:", "askpass", "background", "preserve-env?",
	"edit", "group=", "set-home", "help", "host=", "login", "remove-timestamp", "reset-timestamp",
	"list", "non-interactive", "preserve-groups", "prompt=", "chroot=", "role=", "stdin", "shell",
	"type=", "command-timeout=", "other-user=", "user=", "version", "validate", "close-from=", "chdir=").StopAtOperand()

func evalRule(c *call) {
	c.a.failClosed(CodeEval, c.name+" runs text that cannot be inspected before it runs")
}

// isDiskDevice reports device paths whose overwrite destroys data: disks,
// partitions, device-mapper volumes and memory. (/dev/tcp and /dev/udp are
// bash's network redirections: writes, not destruction.)
func isDiskDevice(p string) bool {
	return hasPrefixAny(p, "/dev/sd", "/dev/hd", "/dev/vd", "/dev/xvd", "/dev/nvme", "/dev/mmcblk",
		"/dev/mapper/", "/dev/dm-", "/dev/disk/", "/dev/md", "/dev/loop", "/dev/mem", "/dev/kmem", "/dev/port")
}

// isStdStream reports output targets that are not files: "-" and sinks.
func isStdStream(p string) bool { return p == "-" || isSinkPath(p) }

// hasPrefixAny reports whether s starts with any prefix.
func hasPrefixAny(s string, prefixes ...string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}
