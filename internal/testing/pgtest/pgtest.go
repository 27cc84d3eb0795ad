// Package pgtest runs a real PostgreSQL server (Debian's postgresql
// package) for tests: one server per test binary, in a directory of its
// own on a free loopback port, and a fresh database per test.
//
// A package whose tests use it calls Main from its TestMain, which stops
// the server when the tests end. The server runs as the test binary's
// child and dies with it (a parent-death signal), so a test binary that
// is killed leaves no server behind.
package pgtest

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Server is a running PostgreSQL server.
type Server struct {
	Dir  string // its data directory's parent; its socket and log are here
	Port int
	cred *syscall.Credential

	postgres, data string
	cmd            *exec.Cmd
	exited         <-chan struct{}

	mu sync.Mutex
	n  int // databases made
}

var (
	once    sync.Once
	shared  *Server
	started error
)

// Main runs the tests and then stops the server, if one was started.
func Main(m interface{ Run() int }) int {
	code := m.Run()
	StopShared()
	return code
}

// Stopping wraps m: its Run runs the tests and then stops the server, for
// a TestMain that hands m to another runner (testscript.Main).
func Stopping(m interface{ Run() int }) interface{ Run() int } { return stopping{m} }

type stopping struct{ m interface{ Run() int } }

func (s stopping) Run() int { return Main(s.m) }

// StopShared stops the server DB started, if it did: for a TestMain that
// cannot call Main.
func StopShared() {
	if shared != nil {
		shared.Stop()
	}
}

// DB returns the URL of a new, empty database on the test binary's
// server, started on first use, and drops the database when the test
// ends. A missing PostgreSQL fails the test: the test command installs it.
func DB(t testing.TB) string {
	t.Helper()
	once.Do(func() { shared, started = Start(os.Getenv("KVSWEEP_TEST_BASE")) })
	if started != nil {
		t.Fatalf("PostgreSQL: %v", started)
	}
	return shared.NewDB(t)
}

// Own starts a server of the test's own, one it may stop and start again
// (Pause, Resume), and stops it when the test ends.
func Own(t testing.TB) *Server {
	t.Helper()
	s, err := Start(os.Getenv("KVSWEEP_TEST_BASE"))
	if err != nil {
		t.Fatalf("PostgreSQL: %v", err)
	}
	t.Cleanup(s.Stop)
	return s
}

// NewDB creates a new, empty database on the server and returns its URL;
// it is dropped when the test ends.
func (s *Server) NewDB(t testing.TB) string {
	t.Helper()
	s.mu.Lock()
	s.n++
	name := fmt.Sprintf("t%d_%d", os.Getpid(), s.n)
	s.mu.Unlock()
	if err := s.exec("CREATE DATABASE " + name); err != nil {
		t.Fatalf("creating database %s: %v", name, err)
	}
	t.Cleanup(func() { _ = s.exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)") })
	return s.URL(name)
}

// exec runs one statement as the superuser.
func (s *Server) exec(sql string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := pgx.Connect(ctx, s.URL("postgres"))
	if err != nil {
		return err
	}
	defer c.Close(context.Background())
	_, err = c.Exec(ctx, sql)
	return err
}

// URL is the URL of database db on the server, as the superuser kvsweep
// (trust authentication on loopback).
func (s *Server) URL(db string) string {
	u := url.URL{Scheme: "postgres", User: url.User("kvsweep"), Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Port)), Path: "/" + db}
	u.RawQuery = "sslmode=disable"
	return u.String()
}

// bin finds a PostgreSQL program: Debian keeps them out of $PATH.
func bin(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	matches, _ := filepath.Glob(filepath.Join("/usr/lib/postgresql", "*", "bin", name))
	if len(matches) == 0 {
		return "", fmt.Errorf("%s is not installed (scripts/test.sh installs Debian's postgresql)", name)
	}
	return matches[len(matches)-1], nil
}

// Start initialises a cluster in a new directory under base (the system's
// temporary directory when empty) and starts its server. As root, both run
// as the postgres user, as PostgreSQL requires.
func Start(base string) (*Server, error) {
	initdb, err := bin("initdb")
	if err != nil {
		return nil, err
	}
	postgres, err := bin("postgres")
	if err != nil {
		return nil, err
	}
	if base == "" {
		base = os.TempDir()
	}
	if err := os.MkdirAll(base, 0o755); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(base, "pg-")
	if err != nil {
		return nil, err
	}
	s := &Server{Dir: dir}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return nil, fmt.Errorf("running PostgreSQL as root needs the postgres user: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		s.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(dir, uid, gid); err != nil {
			return nil, err
		}
	}
	data := filepath.Join(dir, "data")
	if out, err := s.command(initdb, "-D", data, "-A", "trust", "-U", "kvsweep", "-E", "UTF8", "--locale=C", "--no-sync").CombinedOutput(); err != nil {
		return nil, fmt.Errorf("initdb: %v\n%s", err, out)
	}
	return s, s.start(postgres, data)
}

// start runs the server on a free port (another may take the port between
// the choice and the bind: then it tries another).
func (s *Server) start(postgres, data string) error {
	s.postgres, s.data = postgres, data
	var err error
	for range 5 {
		if s.Port, err = freePort(); err != nil {
			return err
		}
		if err = s.run(); err == nil {
			return nil
		}
	}
	return err
}

// run starts the server on s.Port and waits until it accepts connections.
func (s *Server) run() error {
	logf, err := os.OpenFile(filepath.Join(s.Dir, "server.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	s.cmd = s.command(s.postgres, "-D", s.data, "-p", strconv.Itoa(s.Port), "-k", s.Dir,
		"-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "full_page_writes=off",
		"-c", "max_connections=200")
	s.cmd.Stdout, s.cmd.Stderr = logf, logf
	s.cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	if err = s.cmd.Start(); err != nil {
		logf.Close()
		return err
	}
	exited := make(chan struct{})
	s.exited = exited
	go func() { _ = s.cmd.Wait(); logf.Close(); close(exited) }()
	if err := s.waitReady(); err != nil {
		s.halt()
		log, _ := os.ReadFile(filepath.Join(s.Dir, "server.log"))
		return fmt.Errorf("%v\n%s", err, log)
	}
	return nil
}

// waitReady waits until the server accepts connections, or has exited.
func (s *Server) waitReady() error {
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		select {
		case <-s.exited:
			return fmt.Errorf("postgres exited")
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		c, err := pgx.Connect(ctx, s.URL("postgres"))
		cancel()
		if err == nil {
			c.Close(context.Background())
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("postgres did not accept connections within 2 minutes")
}

func (s *Server) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.Dir = s.Dir
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	return cmd
}

// halt stops the server (a fast shutdown, then a kill after a minute) and
// waits for it to exit.
func (s *Server) halt() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-s.exited:
	case <-time.After(time.Minute):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
	s.cmd = nil
}

// Stop stops the server and removes its directory.
func (s *Server) Stop() {
	s.halt()
	_ = os.RemoveAll(s.Dir)
}

// Pause stops the server, keeping its data; Resume starts it again on the
// same port: a database that goes away and comes back.
func (s *Server) Pause() { s.halt() }

// Resume starts the server Pause stopped.
func (s *Server) Resume() error { return s.run() }

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
