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

// apacheConf is httpd.conf for one target: the event MPM, a log line as
// the other peers write theirs, every path aliased to one file, and
// mod_qos's per-client event limit. mod_qos 11 is built against libpcre3,
// which Debian's apache2 (built with pcre2) does not load: LoadFile first,
// as the package's own qos.load does not.
const apacheConf = `ServerRoot {{dir}}
PidFile {{dir}}/httpd.pid
DefaultRuntimeDir {{dir}}
Mutex file:{{dir}} default
Listen {{listen}}
ServerName {{host}}
LoadModule mpm_event_module {{modules}}/mod_mpm_event.so
LoadModule authz_core_module {{modules}}/mod_authz_core.so
LoadModule setenvif_module {{modules}}/mod_setenvif.so
LoadModule alias_module {{modules}}/mod_alias.so
LoadFile {{pcre}}
LoadModule qos_module {{modules}}/mod_qos.so
User www-data
Group www-data
ErrorLog {{dir}}/error.log
LogFormat "%{sec}t.%{msec_frac}t %a %>s" peer
CustomLog {{dir}}/access.log peer
AliasMatch ^/.* {{dir}}/ok.txt
<Directory {{dir}}>
  Require all granted
</Directory>
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
	addr, host, _, err := splitListen(cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("apache mod_qos: %w", err)
	}
	dir, err := newWorkDir(cfg.Dir, "apache")
	if err != nil {
		return nil, fmt.Errorf("apache mod_qos: %w", err)
	}
	conf := strings.NewReplacer("{{dir}}", dir.path, "{{listen}}", addr, "{{host}}", host, "{{modules}}", apacheModules,
		"{{pcre}}", pcre[0], "{{count}}", fmt.Sprint(cfg.Count), "{{seconds}}", fmt.Sprint(cfg.Seconds)).Replace(apacheConf)
	for name, body := range map[string]string{"httpd.conf": conf, "ok.txt": "ok\n"} {
		if err := writeFile(dir.join(name), body, 0o644); err != nil {
			dir.remove()
			return nil, fmt.Errorf("apache mod_qos: %w", err)
		}
	}
	p, err := startProcess(procSpec{name: "apache mod_qos " + addr, dir: dir, addr: addr, logs: []string{dir.join("error.log")},
		bin: bin, args: []string{"-f", dir.join("httpd.conf"), "-DFOREGROUND"}})
	if err != nil {
		return nil, err
	}
	return &ApacheQoS{server{proc: p, addr: addr, accessLog: dir.join("access.log")}}, nil
}
