// Command goyamux is the hashicorp/yamux client side of test/rpc/yamux.test.ts:
// it dials the TypeScript test server the way a Nomad 1.6.1 client does (byte
// 0x06, then a yamux client session) and runs one scenario.
//
// Usage: goyamux <scenario> <host:port>
//
// Every stream it opens starts with one tag byte telling the TypeScript side what
// to do with it. The result is one JSON object on stdout; failures exit 1.
package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/yamux"
)

const rpcMultiplexV2 = 0x06

func main() {
	if len(os.Args) != 3 {
		fail("usage: goyamux <scenario> <host:port>")
	}
	scenario, addr := os.Args[1], os.Args[2]
	run, ok := scenarios[scenario]
	if !ok {
		fail("unknown scenario %q", scenario)
	}
	result, err := run(addr)
	if err != nil {
		fail("%s: %v", scenario, err)
	}
	out, _ := json.Marshal(result)
	fmt.Println(string(out))
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
	os.Exit(1)
}

var scenarios = map[string]func(addr string) (any, error){
	"echo":       func(addr string) (any, error) { return echo(addr, false, 200, 300*1024) },
	"echo-split": func(addr string) (any, error) { return echo(addr, true, 20, 40*1024) },
	"bulk":       bulk,
	"halfclose":  halfClose,
	"reset":      reset,
	"serveropen": serverOpen,
	"backlog":    backlog,
	"keepalive":  keepAlive,
	"goaway":     goAway,
	"close":      closeByServer,
	"vanish":     vanish,
}

type tapConn struct {
	net.Conn
	split bool
	rng   *rand.Rand
	mu    sync.Mutex
	read  bytes.Buffer
}

// Write cuts every write into random pieces, some shorter than a frame header,
// so the TypeScript decoder sees headers and payloads split across TCP segments.
func (c *tapConn) Write(p []byte) (int, error) {
	if !c.split {
		return c.Conn.Write(p)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	written := 0
	for written < len(p) {
		n := 1 + c.rng.Intn(13)
		if c.rng.Intn(2) == 0 {
			n = 1 + c.rng.Intn(4096)
		}
		if n > len(p)-written {
			n = len(p) - written
		}
		m, err := c.Conn.Write(p[written : written+n])
		written += m
		if err != nil {
			return written, err
		}
		if c.rng.Intn(8) == 0 {
			time.Sleep(200 * time.Microsecond)
		}
	}
	return written, nil
}

// Read keeps a copy of everything the server sent, for frame-level checks.
func (c *tapConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.mu.Lock()
	c.read.Write(p[:n])
	c.mu.Unlock()
	return n, err
}

func (c *tapConn) received() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]byte(nil), c.read.Bytes()...)
}

func dial(addr string, split bool, tune func(*yamux.Config)) (*yamux.Session, *tapConn, error) {
	raw, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, nil, err
	}
	if _, err := raw.Write([]byte{rpcMultiplexV2}); err != nil {
		return nil, nil, err
	}
	conn := &tapConn{Conn: raw, split: split, rng: rand.New(rand.NewSource(42))}
	conf := yamux.DefaultConfig()
	conf.LogOutput = os.Stderr
	if tune != nil {
		tune(conf)
	}
	session, err := yamux.Client(conn, conf)
	if err != nil {
		return nil, nil, err
	}
	return session, conn, nil
}

func openTagged(session *yamux.Session, tag byte) (*yamux.Stream, error) {
	stream, err := session.OpenStream()
	if err != nil {
		return nil, err
	}
	if _, err := stream.Write([]byte{tag}); err != nil {
		return nil, err
	}
	return stream, nil
}

func waitNoStreams(session *yamux.Session) error {
	deadline := time.Now().Add(3 * time.Second)
	for session.NumStreams() > 0 {
		if time.Now().After(deadline) {
			return fmt.Errorf("%d streams still open on the Go side", session.NumStreams())
		}
		time.Sleep(10 * time.Millisecond)
	}
	return nil
}

// echoOnce sends a length-prefixed payload on an 'E' stream, reads the echo
// until the server's FIN and then closes its own side.
func echoOnce(session *yamux.Session, payload []byte) error {
	stream, err := openTagged(session, 'E')
	if err != nil {
		return err
	}
	var size [4]byte
	binary.BigEndian.PutUint32(size[:], uint32(len(payload)))
	if _, err := stream.Write(append(size[:], payload...)); err != nil {
		return err
	}
	got, err := io.ReadAll(stream)
	if err != nil {
		return fmt.Errorf("stream %d: read echo: %w", stream.StreamID(), err)
	}
	if !bytes.Equal(got, payload) {
		return fmt.Errorf("stream %d: echo of %d bytes came back as %d different bytes", stream.StreamID(), len(payload), len(got))
	}
	return stream.Close()
}

func echo(addr string, split bool, streams int, maxSize int) (any, error) {
	session, _, err := dial(addr, split, nil)
	if err != nil {
		return nil, err
	}
	defer session.Close()
	rng := rand.New(rand.NewSource(7))
	payloads := make([][]byte, streams)
	total := 0
	for i := range payloads {
		payloads[i] = make([]byte, rng.Intn(maxSize+1))
		rng.Read(payloads[i])
		total += len(payloads[i])
	}
	errs := make(chan error, streams)
	var wg sync.WaitGroup
	for _, p := range payloads {
		wg.Add(1)
		go func(p []byte) {
			defer wg.Done()
			errs <- echoOnce(session, p)
		}(p)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return nil, err
		}
	}
	if err := waitNoStreams(session); err != nil {
		return nil, err
	}
	return map[string]any{"streams": streams, "bytes": total}, nil
}

func deterministic(seed int64, n int) []byte {
	b := make([]byte, n)
	rand.New(rand.NewSource(seed)).Read(b)
	return b
}

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// bulk sends 4 MiB on one stream and then reads 4 MiB back, starting to read
// only after a pause so the server's sender must stop at the window.
func bulk(addr string) (any, error) {
	const size = 4 << 20
	session, _, err := dial(addr, false, nil)
	if err != nil {
		return nil, err
	}
	defer session.Close()
	stream, err := openTagged(session, 'B')
	if err != nil {
		return nil, err
	}
	sent := deterministic(1, size)
	start := time.Now()
	if _, err := stream.Write(sent); err != nil {
		return nil, fmt.Errorf("write 4 MiB: %w", err)
	}
	writeMs := time.Since(start).Milliseconds()
	time.Sleep(700 * time.Millisecond)
	got, err := io.ReadAll(stream)
	if err != nil {
		return nil, fmt.Errorf("read back: %w", err)
	}
	if err := stream.Close(); err != nil {
		return nil, err
	}
	if err := waitNoStreams(session); err != nil {
		return nil, err
	}
	return map[string]any{
		"sentSha": digest(sent), "receivedSha": digest(got), "received": len(got), "writeMs": writeMs,
	}, nil
}

func halfClose(addr string) (any, error) {
	session, _, err := dial(addr, false, nil)
	if err != nil {
		return nil, err
	}
	defer session.Close()

	// The server ends first: its FIN must end our reads while we may still write.
	h, err := openTagged(session, 'H')
	if err != nil {
		return nil, err
	}
	fromServer, err := io.ReadAll(h)
	if err != nil {
		return nil, fmt.Errorf("H: read until server FIN: %w", err)
	}
	if _, err := h.Write([]byte("client-after-fin")); err != nil {
		return nil, fmt.Errorf("H: write after server FIN: %w", err)
	}
	if err := h.Close(); err != nil {
		return nil, err
	}

	// We end first: the server reads our data to its end and then ends too.
	g, err := openTagged(session, 'G')
	if err != nil {
		return nil, err
	}
	if _, err := g.Write([]byte("client-data")); err != nil {
		return nil, err
	}
	if err := g.Close(); err != nil {
		return nil, err
	}
	if err := waitNoStreams(session); err != nil {
		return nil, err
	}
	if err := echoOnce(session, []byte("still alive")); err != nil {
		return nil, err
	}
	return map[string]any{"fromServer": string(fromServer)}, nil
}

func reset(addr string) (any, error) {
	session, _, err := dial(addr, false, func(c *yamux.Config) { c.StreamCloseTimeout = 300 * time.Millisecond })
	if err != nil {
		return nil, err
	}
	defer session.Close()

	// The server destroys this stream: we must see a reset.
	r, err := openTagged(session, 'R')
	if err != nil {
		return nil, err
	}
	_, readErr := io.ReadAll(r)
	if !errors.Is(readErr, yamux.ErrConnectionReset) {
		return nil, fmt.Errorf("R: expected connection reset, got %v", readErr)
	}

	// We close and the server never answers with FIN: after StreamCloseTimeout
	// hashicorp/yamux resets the stream, which the server must see as an error.
	s, err := openTagged(session, 'S')
	if err != nil {
		return nil, err
	}
	if err := s.Close(); err != nil {
		return nil, err
	}
	time.Sleep(600 * time.Millisecond)
	if err := echoOnce(session, []byte("still alive")); err != nil {
		return nil, err
	}
	return map[string]any{"readErr": readErr.Error()}, nil
}

// serverOpen accepts the streams the server opens (even ids) and answers each in
// upper case, while an echo stream of ours (odd id) runs on the same session.
func serverOpen(addr string) (any, error) {
	const expected = 10
	session, _, err := dial(addr, false, nil)
	if err != nil {
		return nil, err
	}
	defer session.Close()
	echoErr := make(chan error, 1)
	go func() { echoErr <- echoOnce(session, bytes.Repeat([]byte("x"), 100_000)) }()

	ids := make([]uint32, 0, expected)
	var wg sync.WaitGroup
	errs := make(chan error, expected)
	for len(ids) < expected {
		stream, err := session.AcceptStream()
		if err != nil {
			return nil, fmt.Errorf("accept: %w", err)
		}
		ids = append(ids, stream.StreamID())
		wg.Add(1)
		go func() {
			defer wg.Done()
			msg, err := io.ReadAll(stream)
			if err != nil {
				errs <- err
				return
			}
			if _, err := stream.Write([]byte(strings.ToUpper(string(msg)))); err != nil {
				errs <- err
				return
			}
			errs <- stream.Close()
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return nil, err
		}
	}
	if err := <-echoErr; err != nil {
		return nil, err
	}
	if err := waitNoStreams(session); err != nil {
		return nil, err
	}
	return map[string]any{"acceptedIds": ids}, nil
}

// backlog never accepts: with a backlog of 2, the third stream the server opens
// is reset and the first two are never acknowledged.
func backlog(addr string) (any, error) {
	session, _, err := dial(addr, false, func(c *yamux.Config) { c.AcceptBacklog = 2 })
	if err != nil {
		return nil, err
	}
	defer session.Close()
	t, err := openTagged(session, 'T')
	if err != nil {
		return nil, err
	}
	verdict, err := io.ReadAll(t)
	if err != nil {
		return nil, err
	}
	t.Close()
	return map[string]any{"verdict": string(verdict)}, nil
}

func keepAlive(addr string) (any, error) {
	session, _, err := dial(addr, false, func(c *yamux.Config) {
		c.KeepAliveInterval = 100 * time.Millisecond
		c.ConnectionWriteTimeout = 1 * time.Second
		c.StreamOpenTimeout = 300 * time.Millisecond
	})
	if err != nil {
		return nil, err
	}
	defer session.Close()
	// Nothing is written on this stream: the server must ACK it anyway, or the
	// StreamOpenTimeout above closes the session.
	if _, err := session.OpenStream(); err != nil {
		return nil, err
	}
	rtts := 0
	deadline := time.Now().Add(1500 * time.Millisecond)
	for time.Now().Before(deadline) {
		if _, err := session.Ping(); err != nil {
			return nil, fmt.Errorf("ping: %w", err)
		}
		rtts++
		time.Sleep(50 * time.Millisecond)
	}
	if session.IsClosed() {
		return nil, errors.New("session closed during keep-alive")
	}
	if err := echoOnce(session, []byte("still alive")); err != nil {
		return nil, err
	}
	return map[string]any{"pings": rtts}, nil
}

// goAway tells the server not to open more streams, then asks it (on a stream
// of ours, which GoAway does not forbid) what its open() did.
func goAway(addr string) (any, error) {
	session, _, err := dial(addr, false, nil)
	if err != nil {
		return nil, err
	}
	defer session.Close()
	if err := session.GoAway(); err != nil {
		return nil, err
	}
	w, err := openTagged(session, 'W')
	if err != nil {
		return nil, err
	}
	verdict, err := io.ReadAll(w)
	if err != nil {
		return nil, err
	}
	w.Close()
	return map[string]any{"verdict": string(verdict)}, nil
}

// closeByServer asks the server to close the session and checks that a GoAway
// (normal) frame arrived before the connection ended.
func closeByServer(addr string) (any, error) {
	session, conn, err := dial(addr, false, nil)
	if err != nil {
		return nil, err
	}
	defer session.Close()
	c, err := openTagged(session, 'C')
	if err != nil {
		return nil, err
	}
	_, readErr := io.ReadAll(c)
	select {
	case <-session.CloseChan():
	case <-time.After(3 * time.Second):
		return nil, errors.New("session still open 3 s after the server closed it")
	}
	goAwayCode := -1
	frames := conn.received()
	for len(frames) >= 12 {
		typ, length := frames[1], binary.BigEndian.Uint32(frames[8:12])
		frames = frames[12:]
		switch typ {
		case 0: // data: skip the payload
			if int(length) > len(frames) {
				return nil, errors.New("truncated data frame from the server")
			}
			frames = frames[length:]
		case 3:
			goAwayCode = int(length)
		}
	}
	readErrText := ""
	if readErr != nil {
		readErrText = readErr.Error()
	}
	return map[string]any{"goAwayCode": goAwayCode, "readErr": readErrText}, nil
}

// vanish opens streams both ways, then disappears without closing anything:
// the process exits with SO_LINGER 0 so the server sees a reset connection.
func vanish(addr string) (any, error) {
	session, conn, err := dial(addr, false, nil)
	if err != nil {
		return nil, err
	}
	for i := 0; i < 5; i++ {
		if _, err := openTagged(session, 'N'); err != nil {
			return nil, err
		}
	}
	for i := 0; i < 2; i++ {
		if _, err := session.AcceptStream(); err != nil {
			return nil, err
		}
	}
	// The pong comes after the server has processed our ACKs.
	if _, err := session.Ping(); err != nil {
		return nil, err
	}
	if tcp, ok := conn.Conn.(*net.TCPConn); ok {
		tcp.SetLinger(0)
	}
	fmt.Println(`{"vanished":true}`)
	os.Exit(0)
	return nil, nil
}
