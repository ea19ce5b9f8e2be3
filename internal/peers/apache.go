package peers

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ApacheQoSConfig configures an Apache httpd target limited by mod_qos
// (Debian's apache2 and libapache2-mod-qos), as its documentation sets a
// per-client request limit: every request sets the QS_Limit event
// (SetEnvIf), and QS_ClientEventLimitCount Count Seconds denies a client
// address once its counter reaches Count within Seconds of the window's
// first event, answered with QS_ErrorResponseCode 429 and no header saying
// when. So Count-1 requests pass per window; the window opens at the
// client's first request after the last one ran out, on time(NULL)'s clock
// of whole seconds (it ends once Seconds whole seconds have passed after
// the second it opened in: a steady client's windows are Seconds+1 long),
// and refused requests count but do not extend it. Every other request is
// answered 200 "ok".
type ApacheQoSConfig struct {
	// Count and Seconds are the directive's arguments. Both required.
	Count, Seconds int
	// Listen is the address to listen on. Empty means 127.0.0.1 on a free
	// port.
	Listen string
	// Dir holds httpd.conf, the answered file and the logs. Empty: a
	// temporary directory that Close removes.
	Dir string
}

// ApacheQoS is a running Apache httpd with mod_qos. Its access log reads
// "<unix time with ms> <client address> <status>", one line per request.
type ApacheQoS struct{ server }

// apacheModules is where Debian's apache2 keeps its modules.
const apacheModules = "/usr/lib/apache2/modules"

// apacheBase is httpd.conf for one target, before its limiter's module:
// the event MPM, a log line as the other peers write theirs, every path
// aliased to one file.
const apacheBase = `ServerRoot {{dir}}
PidFile {{dir}}/httpd.pid
DefaultRuntimeDir {{dir}}
Mutex file:{{dir}} default
Listen {{listen}}
ServerName {{host}}
LoadModule mpm_event_module {{modules}}/mod_mpm_event.so
LoadModule authz_core_module {{modules}}/mod_authz_core.so
LoadModule setenvif_module {{modules}}/mod_setenvif.so
LoadModule alias_module {{modules}}/mod_alias.so
User www-data
Group www-data
ErrorLog {{dir}}/error.log
LogFormat "%{sec}t.%{msec_frac}t %a %>s" peer
CustomLog {{dir}}/access.log peer
AliasMatch ^/.* {{dir}}/ok.txt
<Directory {{dir}}>
  Require all granted
</Directory>
`

// apacheQoSConf is mod_qos's per-client event limit. mod_qos 11 is built
// against libpcre3, which Debian's apache2 (built with pcre2) does not
// load: LoadFile first, as the package's own qos.load does not.
const apacheQoSConf = `LoadFile {{pcre}}
LoadModule qos_module {{modules}}/mod_qos.so
SetEnvIf Request_URI . QS_Limit
QS_ClientEntries 10000
QS_ClientEventLimitCount {{count}} {{seconds}}
QS_ErrorResponseCode 429
`

// StartApacheQoS starts Apache httpd with mod_qos as cfg sets it and
// returns once it accepts connections.
func StartApacheQoS(cfg ApacheQoSConfig) (*ApacheQoS, error) {
	if cfg.Count < 2 || cfg.Seconds < 1 {
		return nil, fmt.Errorf("apache mod_qos: QS_ClientEventLimitCount %d %d: want a count of 2 or more (count-1 pass) and whole seconds", cfg.Count, cfg.Seconds)
	}
	bin, err := LookPath("apache2")
	if err != nil {
		return nil, err
	}
	qos := filepath.Join(apacheModules, "mod_qos.so")
	if _, err := os.Stat(qos); err != nil {
		return nil, &NotInstalledError{Bin: qos, Package: "libapache2-mod-qos", Err: err}
	}
	pcre, err := filepath.Glob("/usr/lib/*/libpcre.so.3")
	if err != nil || len(pcre) == 0 {
		return nil, &NotInstalledError{Bin: "libpcre.so.3", Package: "libpcre3", Err: os.ErrNotExist}
	}
	s, err := startApache(bin, "mod_qos", cfg.Listen, cfg.Dir, apacheQoSConf,
		"{{pcre}}", pcre[0], "{{count}}", fmt.Sprint(cfg.Count), "{{seconds}}", fmt.Sprint(cfg.Seconds))
	if err != nil {
		return nil, err
	}
	return &ApacheQoS{s}, nil
}

// startApache starts bin (apache2) on listen with apacheBase and module
// appended to its httpd.conf, the module's own placeholders replaced by
// vars (pairs, as strings.NewReplacer takes them), in dir (empty: a
// temporary one); name says which module in errors.
func startApache(bin, name, listen, dir0, module string, vars ...string) (server, error) {
	addr, host, _, err := splitListen(listen)
	if err != nil {
		return server{}, fmt.Errorf("apache %s: %w", name, err)
	}
	dir, err := newWorkDir(dir0, "apache")
	if err != nil {
		return server{}, fmt.Errorf("apache %s: %w", name, err)
	}
	conf := strings.NewReplacer(append([]string{"{{dir}}", dir.path, "{{listen}}", addr, "{{host}}", host, "{{modules}}", apacheModules}, vars...)...).
		Replace(apacheBase + module)
	for file, body := range map[string]string{"httpd.conf": conf, "ok.txt": "ok\n"} {
		if err := writeFile(dir.join(file), body, 0o644); err != nil {
			dir.remove()
			return server{}, fmt.Errorf("apache %s: %w", name, err)
		}
	}
	p, err := startProcess(procSpec{name: "apache " + name + " " + addr, dir: dir, addr: addr, logs: []string{dir.join("error.log")},
		bin: bin, args: []string{"-f", dir.join("httpd.conf"), "-DFOREGROUND"}})
	if err != nil {
		return server{}, err
	}
	return server{proc: p, addr: addr, accessLog: dir.join("access.log")}, nil
}

// ApacheEvasiveConfig configures an Apache httpd target guarded by
// mod_evasive (Debian's libapache2-mod-evasive 1.10), as its README sets
// it against a flood of one address: a counter per client address that a
// request more than SiteInterval whole seconds after the address's last
// one resets (time(NULL)'s seconds; at 1, every new second), and the
// request that finds it at SiteCount is refused and puts the address on
// hold: every request of it within Block whole seconds of the last one
// refused is refused too, and holds it longer. Refused with a bare 403
// (the module's default), nothing said of when. An address's first
// refusal may hold nothing: the access log shows a lone 403 at times, the
// next second let through (the hold's node, made by that refusal, keeps no
// time), and a refusal after it holds. The same page asked twice within a
// second (DOSPageCount 2, DOSPageInterval 1, the module's defaults) does
// the same. mod_evasive keeps its counters in each httpd
// process: the target runs one process, as a small site's does.
type ApacheEvasiveConfig struct {
	// SiteCount, SiteInterval and Block are DOSSiteCount,
	// DOSSiteInterval and DOSBlockingPeriod. All required.
	SiteCount, SiteInterval, Block int
	// Listen is the address to listen on. Empty means 127.0.0.1 on a free
	// port.
	Listen string
	// Dir holds httpd.conf, the answered file and the logs. Empty: a
	// temporary directory that Close removes.
	Dir string
}

// ApacheEvasive is a running Apache httpd with mod_evasive. Its access log
// reads as ApacheQoS's.
type ApacheEvasive struct{ server }

// apacheEvasiveConf is mod_evasive on one httpd process (its counters are
// the process's own): the event MPM's threads serve every client.
const apacheEvasiveConf = `StartServers 1
ServerLimit 1
ThreadsPerChild 64
MaxRequestWorkers 64
MinSpareThreads 1
MaxSpareThreads 64
LoadModule evasive20_module {{modules}}/mod_evasive20.so
DOSHashTableSize 3097
DOSPageCount 2
DOSPageInterval 1
DOSSiteCount {{count}}
DOSSiteInterval {{interval}}
DOSBlockingPeriod {{block}}
DOSLogDir {{dir}}
`

// StartApacheEvasive starts Apache httpd with mod_evasive as cfg sets it
// and returns once it accepts connections.
func StartApacheEvasive(cfg ApacheEvasiveConfig) (*ApacheEvasive, error) {
	if cfg.SiteCount < 1 || cfg.SiteInterval < 1 || cfg.Block < 1 {
		return nil, fmt.Errorf("apache mod_evasive: DOSSiteCount %d, DOSSiteInterval %d, DOSBlockingPeriod %d: want each 1 or more (whole seconds)", cfg.SiteCount, cfg.SiteInterval, cfg.Block)
	}
	bin, err := LookPath("apache2")
	if err != nil {
		return nil, err
	}
	mod := filepath.Join(apacheModules, "mod_evasive20.so")
	if _, err := os.Stat(mod); err != nil {
		return nil, &NotInstalledError{Bin: mod, Package: "libapache2-mod-evasive", Err: err}
	}
	s, err := startApache(bin, "mod_evasive", cfg.Listen, cfg.Dir, apacheEvasiveConf,
		"{{count}}", fmt.Sprint(cfg.SiteCount), "{{interval}}", fmt.Sprint(cfg.SiteInterval), "{{block}}", fmt.Sprint(cfg.Block))
	if err != nil {
		return nil, err
	}
	return &ApacheEvasive{s}, nil
}
