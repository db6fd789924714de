// Command gocodec is the Go side of test/rpc/go-msgpack.test.ts and
// msgpack-rpc.test.ts: it encodes and decodes with a go-msgpack handle set up
// the way Nomad 1.6.1 sets up structs.MsgpackHandle, and speaks net/rpc over
// net-rpc-msgpackrpc as Nomad's client and server do.
//
//	gocodec vectors          JSON lines {name,type,hex,canonicalHex,json}
//	gocodec decode           stdin JSON lines {type,hex} -> {json,canonicalHex} | {error}
//	gocodec serve            net/rpc server on 127.0.0.1:0; prints "LISTEN addr"; stops when stdin closes
//	gocodec client ADDR      net/rpc client calls against ADDR; prints JSON lines of results
package main

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/rpc"
	"os"
	"reflect"
	"sync"
	"time"

	"github.com/hashicorp/go-msgpack/codec"
	msgpackrpc "github.com/hashicorp/net-rpc-msgpackrpc"
)

// newHandle mirrors the settings of Nomad's structs.MsgpackHandle.
func newHandle(canonical bool) *codec.MsgpackHandle {
	h := &codec.MsgpackHandle{}
	h.RawToString = true
	h.BasicHandle.TimeNotBuiltin = true
	h.MapType = reflect.TypeOf(map[string]interface{}(nil))
	h.TypeInfos = codec.NewTypeInfos([]string{"codec"})
	// Only for vectors compared byte for byte: map entries sorted instead
	// of in Go's random map order (struct fields are sorted either way).
	h.Canonical = canonical
	return h
}

var handle = newHandle(false)
var canonicalHandle = newHandle(true)

func encode(h *codec.MsgpackHandle, v interface{}) []byte {
	var buf bytes.Buffer
	if err := codec.NewEncoder(&buf, h).Encode(v); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

var types = map[string]func() interface{}{
	"Job":                      func() interface{} { return &Job{} },
	"TaskState":                func() interface{} { return &TaskState{} },
	"Node":                     func() interface{} { return &Node{} },
	"NodeRegisterRequest":      func() interface{} { return &NodeRegisterRequest{} },
	"NodeUpdateResponse":       func() interface{} { return &NodeUpdateResponse{} },
	"NodeSpecificRequest":      func() interface{} { return &NodeSpecificRequest{} },
	"NodeClientAllocsResponse": func() interface{} { return &NodeClientAllocsResponse{} },
	"Allocation":               func() interface{} { return &Allocation{} },
	"AllocsGetResponse":        func() interface{} { return &AllocsGetResponse{} },
	"SingleAllocResponse":      func() interface{} { return &SingleAllocResponse{} },
	"Numbers":                  func() interface{} { return &Numbers{} },
	"StreamingRpcHeader":       func() interface{} { return &StreamingRpcHeader{} },
	"StreamingRpcAck":          func() interface{} { return &StreamingRpcAck{} },
	"Interface":                func() interface{} { var v interface{}; return &v },
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: gocodec vectors|decode|serve|client ADDR")
		os.Exit(2)
	}
	out := json.NewEncoder(os.Stdout)
	switch os.Args[1] {
	case "vectors":
		for _, s := range samples() {
			js, err := json.Marshal(s.value)
			if err != nil {
				panic(err)
			}
			check(out.Encode(map[string]interface{}{
				"name": s.name, "type": s.typ, "bytesComparable": s.bytesComparable,
				"hex": hex.EncodeToString(encode(handle, s.value)), "canonicalHex": hex.EncodeToString(encode(canonicalHandle, s.value)),
				"json": json.RawMessage(js),
			}))
		}
	case "decode":
		decodeLines(out)
	case "serve":
		serve()
	case "client":
		runClient(os.Args[2], out)
	default:
		fmt.Fprintln(os.Stderr, "unknown mode", os.Args[1])
		os.Exit(2)
	}
}

func check(err error) {
	if err != nil {
		panic(err)
	}
}

func decodeLines(out *json.Encoder) {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 64<<20)
	for in.Scan() {
		var req struct{ Type, Hex string }
		check(json.Unmarshal(in.Bytes(), &req))
		raw, err := hex.DecodeString(req.Hex)
		check(err)
		v := types[req.Type]()
		if err := codec.NewDecoder(bytes.NewReader(raw), handle).Decode(v); err != nil {
			check(out.Encode(map[string]string{"error": err.Error()}))
			continue
		}
		js, err := json.Marshal(v)
		if err != nil {
			check(out.Encode(map[string]string{"error": "json: " + err.Error()}))
			continue
		}
		check(out.Encode(map[string]interface{}{"json": json.RawMessage(js), "canonicalHex": hex.EncodeToString(encode(canonicalHandle, v))}))
	}
}

// Test is the net/rpc service the TS client calls.
type Test struct{}

// Echo returns the request's node and event, as Node.Register's arguments travel.
func (Test) Echo(args *NodeRegisterRequest, reply *NodeRegisterRequest) error {
	*reply = *args
	return nil
}

func (Test) GetAlloc(args *NodeSpecificRequest, reply *SingleAllocResponse) error {
	reply.Alloc = sampleAlloc()
	reply.Alloc.NodeID = args.NodeID
	reply.Index = args.MinQueryIndex + 1
	return nil
}

func (Test) Fail(args *NodeSpecificRequest, reply *GenericResponse) error {
	return errors.New("node " + args.NodeID + " not found")
}

// Sleep answers after args.MaxQueryTime, so calls on one connection finish out of order.
func (Test) Sleep(args *NodeSpecificRequest, reply *NodeSpecificRequest) error {
	time.Sleep(args.MaxQueryTime)
	*reply = *args
	return nil
}

func serve() {
	srv := rpc.NewServer()
	check(srv.RegisterName("Test", Test{}))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	check(err)
	fmt.Printf("LISTEN %s\n", ln.Addr())
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			// As Nomad's client agent serves the server's calls (client/rpc.go).
			go srv.ServeCodec(msgpackrpc.NewCodecFromHandle(true, true, conn, handle))
		}
	}()
	_, _ = io.Copy(io.Discard, os.Stdin)
	ln.Close()
}

type clientResult struct {
	Call  string          `json:"call"`
	Sent  json.RawMessage `json:"sent,omitempty"`
	Reply json.RawMessage `json:"reply,omitempty"`
	Error string          `json:"error,omitempty"`
}

func report(out *json.Encoder, call string, sent, reply interface{}, err error) {
	r := clientResult{Call: call}
	if sent != nil {
		js, jerr := json.Marshal(sent)
		check(jerr)
		r.Sent = js
	}
	if err != nil {
		r.Error = err.Error()
	} else {
		js, jerr := json.Marshal(reply)
		check(jerr)
		r.Reply = js
	}
	check(out.Encode(r))
}

// runClient calls the TS server as Nomad's client agent does: one codec per
// connection and msgpackrpc.CallWithCodec (helper/pool), then concurrent
// calls through net/rpc's own Client on a second connection.
func runClient(addr string, out *json.Encoder) {
	conn, err := net.Dial("tcp", addr)
	check(err)
	cc := msgpackrpc.NewCodecFromHandle(true, true, conn, handle)

	reg := &NodeRegisterRequest{Node: sampleNode(), NodeEvent: &NodeEvent{Message: "up", Subsystem: "Cluster", Timestamp: indiaTime}, WriteRequest: WriteRequest{Region: "global"}}
	var regReply NodeUpdateResponse
	report(out, "Node.Register", reg, &regReply, msgpackrpc.CallWithCodec(cc, "Node.Register", reg, &regReply))

	var echo NodeRegisterRequest
	report(out, "Test.Echo", reg, &echo, msgpackrpc.CallWithCodec(cc, "Test.Echo", reg, &echo))

	var allocs AllocsGetResponse
	report(out, "Alloc.GetAllocs", nil, &allocs, msgpackrpc.CallWithCodec(cc, "Alloc.GetAllocs", &NodeSpecificRequest{NodeID: "n1"}, &allocs))

	var failed GenericResponse
	report(out, "Test.Fail", nil, &failed, msgpackrpc.CallWithCodec(cc, "Test.Fail", &NodeSpecificRequest{NodeID: "n1"}, &failed))

	// The stream stays usable after an error reply.
	var after NodeClientAllocsResponse
	report(out, "Node.GetClientAllocs", nil, &after, msgpackrpc.CallWithCodec(cc, "Node.GetClientAllocs", &NodeSpecificRequest{NodeID: "n1"}, &after))
	cc.Close()

	conn2, err := net.Dial("tcp", addr)
	check(err)
	client := rpc.NewClientWithCodec(msgpackrpc.NewCodecFromHandle(true, true, conn2, handle))
	var wg sync.WaitGroup
	var mu sync.Mutex
	order := []string{}
	for _, d := range []time.Duration{300 * time.Millisecond, 10 * time.Millisecond, 150 * time.Millisecond} {
		wg.Add(1)
		go func(d time.Duration) {
			defer wg.Done()
			var reply NodeSpecificRequest
			err := client.Call("Test.Sleep", &NodeSpecificRequest{QueryOptions: QueryOptions{MaxQueryTime: d}}, &reply)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				order = append(order, "error: "+err.Error())
			} else {
				order = append(order, reply.MaxQueryTime.String())
			}
		}(d)
	}
	wg.Wait()
	report(out, "concurrent", nil, order, nil)
	client.Close()
}
