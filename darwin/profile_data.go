package darwin

// The fixed lists a profile is built from: what every process needs to
// start, the system directories, devices, Mach services and secrets.

// DarwinSystemDirs are the directories `system: host` makes readable on
// macOS: the host's HostSystemDirs that macOS has. The list is fixed, not
// probed, so that a profile generated on Linux for review is the one a Mac
// would get.
var DarwinSystemDirs = []string{"/usr", "/bin", "/sbin", "/etc"}

// DeveloperDirs are also readable with `system: host`: /usr/bin/git, cc
// and friends are shims that run the real tools from the Command Line
// Tools or Xcode, so without them the usual developer commands fail.
var DeveloperDirs = []string{
	"/Library/Developer/CommandLineTools",
	"/Applications/Xcode.app",
	"/private/var/db/xcode_select_link",
}

// darwinSecrets are masked whenever the host system is visible: the same
// patterns as spec's host secrets (harmless where a file does not exist)
// plus macOS's own password database. A '*' matches within one name.
var darwinSecrets = []string{
	"/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-",
	"/etc/ssh/ssh_host_*key", "/etc/ssl/private", "/etc/sudoers", "/etc/sudoers.d",
	"/etc/security/opasswd", "/etc/krb5.keytab", "/etc/master.passwd",
}

// startupReads are the system files every process needs to start, whatever
// the sandbox's system setting: dyld, the dyld shared cache (in the
// cryptexes since macOS 13, in /System/Library/dyld and /private/var/db/dyld
// before), the libraries in /usr/lib and /System/Library, Rosetta and
// Apple's frameworks in /Library/Apple, locale, terminfo and time zone data,
// and /private/var/select, where /bin/sh finds the shell it runs.
// /System is not allowed whole: /System/Volumes/Data holds every user's
// files under a second name.
var startupReads = []string{
	"/usr/lib",
	"/usr/share/locale",
	"/usr/share/terminfo",
	"/usr/share/zoneinfo",
	"/System/Library",
	"/System/Cryptexes",
	"/System/Volumes/Preboot/Cryptexes",
	"/Library/Apple",
	"/private/var/db/dyld",
	"/private/var/db/timezone",
	"/private/var/select",
}

// startupLiterals are single files every process may read.
var startupLiterals = []string{"/private/etc/localtime", "/dev/random", "/dev/urandom"}

// devReadWrite are the device nodes a process may read and write; /dev/tty
// is the controlling terminal, which exists only in a run with a pty.
var devReadWrite = []string{"/dev/null", "/dev/zero", "/dev/tty", "/dev/dtracehelper"}

// devIoctl are the device nodes a process may use ioctl on, besides the
// terminals matched by ttyRegex.
var devIoctl = []string{"/dev/null", "/dev/zero", "/dev/random", "/dev/urandom", "/dev/tty", "/dev/dtracehelper"}

// ttyRegex matches pseudo-terminal devices. Only ioctl is allowed on them
// (a terminal the process holds open, such as its pty): opening another
// one stays denied.
const ttyRegex = "^/dev/ttys[0-9]+$"

// machServices are the Mach services a command-line process needs: the
// system log, notifications (time zone changes, for one) and the user and
// group database (getpwuid, which git, ssh and Python's expanduser use).
var machServices = []string{
	"com.apple.logd",
	"com.apple.system.logger",
	"com.apple.system.notification_center",
	"com.apple.system.opendirectoryd.libinfo",
	"com.apple.system.opendirectoryd.membership",
}

// networkMachServices are added when the network is on: DNS resolution and
// TLS certificate checks go through them.
var networkMachServices = []string{
	"com.apple.SecurityServer",
	"com.apple.SystemConfiguration.DNSConfiguration",
	"com.apple.SystemConfiguration.configd",
	"com.apple.dnssd.service",
	"com.apple.networkd",
	"com.apple.ocspd",
	"com.apple.trustd.agent",
}

// networkReads are the resolver and certificate files a networked process
// reads, allowed when the network is on even without `system: host`.
var networkReads = []string{
	"/private/etc/hosts",
	"/private/etc/resolv.conf",
	"/private/etc/services",
	"/private/etc/protocols",
	"/private/etc/ssl/cert.pem",
	"/private/etc/ssl/certs",
	"/private/var/run/resolv.conf",
}

// certificateReads are the certificate files a client that verifies TLS
// itself reads (curl, git), allowed with an allow list, whose connections
// all go through cordon's proxy: the resolver's files are not.
var certificateReads = []string{
	"/private/etc/ssl/cert.pem",
	"/private/etc/ssl/certs",
}
