package mcpd

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MaxLineBytes bounds one line over stdio (one message or batch), as
// MAX_REQUEST_SIZE_BYTES bounds an HTTP body by default.
const MaxLineBytes = 10 << 20

// batchesRemoved is the first protocol version without JSON-RPC batches.
const batchesRemoved = "2025-06-18"

// lineTransport serves MCP over newline-delimited JSON (stdio), one line
// per message or batch, like the SDK's stdio transport, except that a line
// it cannot take (not UTF-8, not JSON, not a JSON-RPC message, a batch
// over MaxBatch, a line over MaxLineBytes) is answered with a JSON-RPC
// error and the session goes on with the next line. The SDK's transport
// decodes one JSON stream: its first malformed value ends the session.
// Lines that pass checkFrame go on to the SDK's transport through a pipe;
// answers from both share out, one whole line per write.
type lineTransport struct {
	in  io.Reader
	out io.Writer
}

func (t *lineTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	pr, pw := io.Pipe()
	out := &lineWriter{w: t.out}
	inner, err := (&mcp.IOTransport{Reader: pr, Writer: out, MaxLineLength: -1}).Connect(ctx)
	if err != nil {
		return nil, err
	}
	c := &lineConn{Connection: inner, out: out}
	go c.pump(t.in, pw)
	return c, nil
}

// lineWriter writes whole lines to w, one at a time.
type lineWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (w *lineWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.w.Write(b)
}

func (w *lineWriter) Close() error { return nil }

type lineConn struct {
	mcp.Connection
	out     *lineWriter
	version string // the protocol version the client's initialize asked for
}

// pump reads in line by line until it ends, answering the lines
// checkFrame refuses and passing the others to the SDK through pw.
func (c *lineConn) pump(in io.Reader, pw *io.PipeWriter) {
	defer pw.Close()
	r := bufio.NewReaderSize(in, 64<<10)
	for {
		line, tooLong, err := readLine(r)
		switch {
		case tooLong:
			c.refuse(&frameError{err: jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest,
				Message: fmt.Sprintf("invalid request: a line over %d bytes; nothing was run", MaxLineBytes)}})
		case len(bytes.TrimSpace(line)) > 0:
			if ferr := c.check(line); ferr != nil {
				c.refuse(ferr)
			} else if _, werr := pw.Write(append(line, '\n')); werr != nil {
				return // the session has ended
			}
		}
		if err != nil {
			return // end of input (or a read error): the session ends
		}
	}
}

// check is checkFrame of a line, and refuses batches once the client asked
// for a protocol without them (as the SDK does, but without ending the
// session).
func (c *lineConn) check(line []byte) *frameError {
	msgs, ferr := checkFrame(line, "line")
	if ferr != nil {
		return ferr
	}
	for _, m := range msgs {
		if r, ok := m.(*jsonrpc.Request); ok && r.Method == "initialize" {
			var p struct {
				ProtocolVersion string `json:"protocolVersion"`
			}
			if json.Unmarshal(r.Params, &p) == nil {
				c.version = p.ProtocolVersion
			}
		}
	}
	if isBatch(line) && c.version >= batchesRemoved {
		return &frameError{err: jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: fmt.Sprintf(
			"invalid request: protocol %s has no JSON-RPC batches (removed in %s); send one message per line", c.version, batchesRemoved)}}
	}
	return nil
}

func (c *lineConn) refuse(e *frameError) { c.out.Write(e.response(false)) }

// Read is the SDK's Read, except that a message the SDK refuses after
// checkFrame passed it is answered, and the session goes on.
func (c *lineConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		m, err := c.Connection.Read(ctx)
		if err == nil || ctx.Err() != nil || errors.Is(err, io.EOF) || errors.Is(err, io.ErrClosedPipe) {
			return m, err
		}
		c.refuse(&frameError{err: jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "invalid request: " + err.Error()}})
	}
}

// readLine reads one line of r without its newline. A line over
// MaxLineBytes is read to its end and dropped (tooLong). err is the read
// error that ended the input, after the last line.
func readLine(r *bufio.Reader) (line []byte, tooLong bool, err error) {
	for {
		chunk, err := r.ReadSlice('\n')
		if !tooLong {
			if len(line)+len(chunk) > MaxLineBytes+1 {
				tooLong, line = true, nil
			} else {
				line = append(line, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return bytes.TrimSuffix(line, []byte("\n")), tooLong, err
	}
}
