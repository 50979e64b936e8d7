package server

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/huitian/huitian/client"
)

// TestHealthAndReflectionReadLimits: a gRPC frame declaring 600 MiB to the
// health or reflection service is ResourceExhausted at once. Before the
// fix both were built without a read limit: the frame's declared size was
// taken at its word (one such call took the server from 46 MB to 2.15 GB).
func TestHealthAndReflectionReadLimits(t *testing.T) {
	ts := start(t, nil)
	for _, path := range []string{
		"/grpc.health.v1.Health/Check",
		"/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
	} {
		var body bytes.Buffer
		body.WriteByte(0)
		_ = binary.Write(&body, binary.BigEndian, uint32(600<<20))
		body.WriteString("0123456789")
		// gRPC over h2c, as the probe sent it.
		req, err := http.NewRequest(http.MethodPost, ts.URL+path, &body)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/grpc")
		req.Header.Set("Te", "trailers")
		resp, err := client.NewHTTPClient(false, nil).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		status := resp.Header.Get("Grpc-Status")
		if status == "" {
			status = resp.Trailer.Get("Grpc-Status")
		}
		if status != "8" {
			t.Errorf("%s with a 600 MiB frame: grpc-status %q, want 8 (resource exhausted)", path, status)
		}
	}
}

// closedByServer reads from c until the server closes it. It fails the
// test if the server keeps the connection open for 20 s, far past the
// timeouts under test (hundreds of ms): a bound so that a regression fails
// instead of hanging, not a measurement.
func closedByServer(t *testing.T, c net.Conn, r io.Reader) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
	_, err := io.Copy(io.Discard, r)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Errorf("the server kept the connection open")
	}
}

func dial(t *testing.T, ts *testServer) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(ts.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestSlowAndIdleConnectionsAreClosed: a trickled body, an idle keep-alive
// connection, an HTTP/2 stream that never sends its body and a client
// refused for its token are all closed by the server. Before the fix only
// ReadHeaderTimeout was set: each stayed open (past 40 s in the probe), and
// under `ulimit -n 200` such connections locked new clients out.
func TestSlowAndIdleConnectionsAreClosed(t *testing.T) {
	short := func(c *Config) {
		c.HeaderTimeout, c.BodyTimeout, c.IdleTimeout = 300*time.Millisecond, 300*time.Millisecond, 300*time.Millisecond
	}
	ts := start(t, short)

	t.Run("trickled body", func(t *testing.T) {
		c := dial(t, ts)
		io.WriteString(c, "POST /huitian.v1.PlannerService/Plan HTTP/1.1\r\nHost: h\r\nContent-Type: application/proto\r\nContent-Length: 1000\r\n\r\n0123456789")
		closedByServer(t, c, c)
	})

	t.Run("idle keep-alive", func(t *testing.T) {
		c := dial(t, ts)
		io.WriteString(c, "GET /metrics HTTP/1.1\r\nHost: h\r\n\r\n")
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		closedByServer(t, c, br)
	})

	t.Run("h2c stream without its body", func(t *testing.T) {
		c := dial(t, ts)
		io.WriteString(c, http2.ClientPreface)
		fr := http2.NewFramer(c, c)
		if err := fr.WriteSettings(); err != nil {
			t.Fatal(err)
		}
		var hb bytes.Buffer
		enc := hpack.NewEncoder(&hb)
		for _, f := range [][2]string{{":method", "POST"}, {":scheme", "http"}, {":authority", "h"},
			{":path", "/huitian.v1.PlannerService/Plan"}, {"content-type", "application/grpc"}, {"te", "trailers"}} {
			enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
		}
		if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: hb.Bytes(), EndHeaders: true}); err != nil {
			t.Fatal(err)
		}
		_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
		for {
			f, err := fr.ReadFrame()
			if err != nil {
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() {
					t.Errorf("the stream stayed open without its body")
				}
				return
			}
			switch f := f.(type) {
			case *http2.RSTStreamFrame, *http2.GoAwayFrame:
				return
			case *http2.HeadersFrame:
				if f.StreamID == 1 && f.StreamEnded() {
					return // answered with an error in the trailers
				}
			case *http2.DataFrame:
				if f.StreamID == 1 && f.StreamEnded() {
					return
				}
			}
		}
	})

	t.Run("refused for its token", func(t *testing.T) {
		tokenFile := filepath.Join(t.TempDir(), "token")
		if err := os.WriteFile(tokenFile, []byte("s3cret\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		tts := start(t, func(c *Config) { short(c); c.IdleTimeout = time.Hour; c.TokenFile = tokenFile })
		c := dial(t, tts)
		io.WriteString(c, "POST /huitian.v1.PlannerService/Plan HTTP/1.1\r\nHost: h\r\nContent-Type: application/proto\r\nContent-Length: 0\r\n\r\n")
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("status %d, want 401", resp.StatusCode)
		}
		closedByServer(t, c, br)
	})
}
