// Client driver for github.com/Azure/go-amqp: the JSON-lines command protocol of clients/PROTOCOL.md.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime/debug"
	"time"

	amqp "github.com/Azure/go-amqp"
)

type request struct {
	ID        int    `json:"id"`
	Op        string `json:"op"`
	URL       string `json:"url"`
	Address   string `json:"address"`
	Credit    int32  `json:"credit"`
	Count     int    `json:"count"`
	TimeoutMs int    `json:"timeout_ms"`
}

var (
	conn     *amqp.Conn
	session  *amqp.Session
	receiver *amqp.Receiver
	sender   *amqp.Sender
	manual   bool
)

func timeout(r request, dflt int) time.Duration {
	if r.TimeoutMs > 0 {
		return time.Duration(r.TimeoutMs) * time.Millisecond
	}
	return time.Duration(dflt) * time.Millisecond
}

func run(r request) (map[string]any, error) {
	out := map[string]any{}
	switch r.Op {
	case "connect":
		ctx, cancel := context.WithTimeout(context.Background(), timeout(r, 5000))
		defer cancel()
		var err error
		conn, err = amqp.Dial(ctx, r.URL, &amqp.ConnOptions{SASLType: amqp.SASLTypeAnonymous(), IdleTimeout: 0})
		if err != nil {
			return nil, err
		}
		session, err = conn.NewSession(ctx, nil)
		return out, err
	case "receiver":
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		credit := r.Credit
		manual = credit == 0
		if manual {
			credit = -1
		}
		var err error
		receiver, err = session.NewReceiver(ctx, r.Address, &amqp.ReceiverOptions{Credit: credit})
		if manual {
			out["api"] = "NewReceiver(Credit: -1), IssueCredit(1), Receive(ctx with timeout), DrainCredit"
		} else {
			out["api"] = fmt.Sprintf("NewReceiver(Credit: %d), Receive(ctx with timeout)", credit)
		}
		return out, err
	case "receive":
		got := []string{}
		count := r.Count
		if count == 0 {
			count = 1
		}
		out["timeout"] = false
		for i := 0; i < count; i++ {
			if manual {
				if err := receiver.IssueCredit(1); err != nil {
					out["messages"] = got
					return out, err
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), timeout(r, 1000))
			msg, err := receiver.Receive(ctx, nil)
			cancel()
			if err == context.DeadlineExceeded && manual {
				dctx, dcancel := context.WithTimeout(context.Background(), timeout(r, 1000))
				derr := receiver.DrainCredit(dctx, nil)
				dcancel()
				if derr != nil {
					out["messages"] = got
					return out, derr
				}
				if m := receiver.Prefetched(); m != nil {
					msg, err = m, nil
				}
			}
			if err == context.DeadlineExceeded {
				out["timeout"] = true
				break
			}
			if err != nil {
				out["messages"] = got
				return out, err
			}
			got = append(got, fmt.Sprint(msg.Value))
			_ = receiver.AcceptMessage(context.Background(), msg)
		}
		out["messages"] = got
		return out, nil
	case "stop":
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		out["api"] = "receiver.Close()"
		return out, receiver.Close(ctx)
	case "sender":
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		var err error
		sender, err = session.NewSender(ctx, r.Address, nil)
		return out, err
	case "send":
		sent := 0
		for i := 0; i < max(r.Count, 1); i++ {
			ctx, cancel := context.WithTimeout(context.Background(), timeout(r, 5000))
			err := sender.Send(ctx, amqp.NewMessage([]byte(fmt.Sprintf("m%d", i))), nil)
			cancel()
			if err != nil {
				out["sent"] = sent
				return out, err
			}
			sent++
		}
		out["sent"] = sent
		return out, nil
	case "close":
		if conn != nil {
			err := conn.Close()
			conn = nil
			return out, err
		}
		return out, nil
	}
	return nil, fmt.Errorf("unknown op %s", r.Op)
}

func main() {
	version := "unknown"
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, d := range info.Deps {
			if d.Path == "github.com/Azure/go-amqp" {
				version = d.Version
			}
		}
	}
	enc := json.NewEncoder(os.Stdout)
	enc.Encode(map[string]any{"id": 0, "ok": true, "ready": true, "library": "go-amqp", "version": version})
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		var r request
		if err := json.Unmarshal(in.Bytes(), &r); err != nil {
			continue
		}
		if r.Op == "exit" {
			break
		}
		t0 := time.Now()
		out, err := run(r)
		if out == nil {
			out = map[string]any{}
		}
		out["id"] = r.ID
		out["ok"] = err == nil
		if err != nil {
			out["error"] = err.Error()
		}
		out["ms"] = time.Since(t0).Milliseconds()
		enc.Encode(out)
	}
}
