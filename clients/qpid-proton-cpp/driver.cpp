// Client driver for Qpid Proton C++ (Debian's libqpid-proton-cpp12): the JSON-lines command protocol of
// clients/PROTOCOL.md. The container runs in its own thread and the driver hands it work through the
// connection's work_queue, as the library's examples/multithreaded_client.cpp does (0.37.0: "container.run()" in
// a std::thread, `work_queue()->add([=]() {...})`). Citations: the installed headers (/usr/include/proton/*.hpp,
// 0.37.0) and the examples of the qpid-proton repository at tag 0.37.0 (cpp/examples/).
#include <proton/connection.hpp>
#include <proton/connection_options.hpp>
#include <proton/container.hpp>
#include <proton/delivery.hpp>
#include <proton/error_condition.hpp>
#include <proton/message.hpp>
#include <proton/messaging_handler.hpp>
#include <proton/receiver.hpp>
#include <proton/receiver_options.hpp>
#include <proton/sender.hpp>
#include <proton/sender_options.hpp>
#include <proton/session.hpp>
#include <proton/source_options.hpp>
#include <proton/target_options.hpp>
#include <proton/tracker.hpp>
#include <proton/transport.hpp>
#include <proton/version.h>
#include <proton/work_queue.hpp>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <iostream>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono;

// -- a flat JSON object of strings, numbers and booleans (what the suite sends) ---------------------------
static std::map<std::string, std::string> parse(const std::string& line) {
    std::map<std::string, std::string> out;
    size_t i = 0;
    auto skip = [&]() { while (i < line.size() && (isspace((unsigned char)line[i]) || line[i] == ',' || line[i] == '{' || line[i] == '}' || line[i] == ':')) i++; };
    auto str = [&]() {
        std::string s;
        i++;                                     // opening quote
        while (i < line.size() && line[i] != '"') {
            if (line[i] == '\\' && i + 1 < line.size()) { i++; s += line[i] == 'n' ? '\n' : line[i]; }
            else s += line[i];
            i++;
        }
        i++;
        return s;
    };
    while (true) {
        skip();
        if (i >= line.size() || line[i] != '"') break;
        std::string key = str();
        skip();
        std::string value;
        if (i < line.size() && line[i] == '"') value = str();
        else { while (i < line.size() && line[i] != ',' && line[i] != '}') value += line[i++]; }
        out[key] = value;
    }
    return out;
}

static std::string q(const std::string& s) {
    std::string o = "\"";
    for (char c : s) {
        if (c == '"' || c == '\\') { o += '\\'; o += c; }
        else if (c == '\n' || c == '\r') o += ' ';
        else if ((unsigned char)c < 0x20) o += ' ';
        else o += c;
    }
    return o + "\"";
}

static int num(std::map<std::string, std::string>& a, const std::string& k, int dflt) {
    auto it = a.find(k);
    if (it == a.end() || it->second.empty()) return dflt;
    return std::stoi(it->second);
}

// -- the application: a messaging_handler (the library's event API) ----------------------------------------
class app : public proton::messaging_handler {
  public:
    std::mutex m;
    std::condition_variable cv;
    proton::connection conn;
    proton::work_queue* wq = nullptr;
    proton::receiver rcv;
    proton::sender snd;
    bool opened = false, receiver_open = false, sender_open = false, closed = false, drained = false;
    std::deque<std::string> inbox;
    std::vector<std::string> events;      // what the library told the application, not yet reported
    std::vector<std::string> drains;      // drains the library handed the application: {"handed":..,"answered":..}
    int to_send = 0, next_body = 0, sent = 0;

    void notify() { cv.notify_all(); }
    void event(const proton::connection& c, const std::string& what, const proton::error_condition& e) {
        std::lock_guard<std::mutex> l(m);
        if (c != conn) return;                  // an earlier case's connection going away
        events.push_back(what + ": " + e.name() + " " + e.description());
        notify();
    }

    void on_connection_open(proton::connection& c) override {
        // the connection's work_queue, kept for the driver's thread (examples/multithreaded_client.cpp keeps
        // `work_queue_ = &s.work_queue()` in its open handler)
        std::lock_guard<std::mutex> l(m); conn = c; wq = &c.work_queue(); opened = true; notify();
    }
    void on_receiver_open(proton::receiver& r) override {
        std::lock_guard<std::mutex> l(m); rcv = r; receiver_open = true; notify();
    }
    void on_sender_open(proton::sender& s) override {
        std::lock_guard<std::mutex> l(m); snd = s; sender_open = true; notify();
    }
    // messaging_handler::on_message (examples/simple_recv.cpp): the delivery is accepted by the library's
    // auto_accept after this returns (receiver_options::auto_accept, default true; messaging_adapter.cpp
    // on_delivery).
    void on_message(proton::delivery&, proton::message& msg) override {
        std::lock_guard<std::mutex> l(m);
        inbox.push_back(proton::coerce<std::string>(msg.body()));
        notify();
    }
    // on_receiver_drain_finish: "the outstanding drained credit reaches zero" (receiver.hpp drain()).
    void on_receiver_drain_finish(proton::receiver&) override {
        std::lock_guard<std::mutex> l(m); drained = true; notify();
    }
    // examples/simple_send.cpp on_sendable: `while (s.credit() && sent < total) { ... s.send(msg); }`
    void on_sendable(proton::sender& s) override {
        std::lock_guard<std::mutex> l(m);
        while (s.credit() > 0 && to_send > 0) {
            proton::message msg;
            msg.body("m" + std::to_string(next_body++));
            s.send(msg);
            to_send--; sent++;
        }
        notify();
    }
    // The drain is the application's (messaging_handler.hpp: on_sender_drain_start; sender.hpp return_credit():
    // "Return all unused credit to the receiver in response to a drain request"): with nothing to send, answer it.
    void on_sender_drain_start(proton::sender& s) override {
        std::lock_guard<std::mutex> l(m);
        std::string answered = "null";
        if (to_send == 0) { s.return_credit(); answered = "\"sender.return_credit()\""; }
        drains.push_back("{\"handed\":\"messaging_handler::on_sender_drain_start\",\"answered\":" + answered + "}");
    }
    void on_transport_error(proton::transport& t) override { event(t.connection(), "transport_error", t.error()); }
    void on_connection_error(proton::connection& c) override { event(c, "connection_error", c.error()); }
    void on_session_error(proton::session& s) override { event(s.connection(), "session_error", s.error()); }
    void on_receiver_error(proton::receiver& r) override { event(r.connection(), "receiver_error", r.error()); }
    void on_sender_error(proton::sender& s) override { event(s.connection(), "sender_error", s.error()); }
    // messaging_handler::on_error: the fallback of every on_*_error (messaging_handler.hpp); recorded
    void on_error(const proton::error_condition& e) override {
        std::lock_guard<std::mutex> l(m); events.push_back("error: " + e.name() + " " + e.description()); notify();
    }
    void on_connection_close(proton::connection& c) override {
        std::lock_guard<std::mutex> l(m); if (c == conn) closed = true; notify();
    }
    void on_transport_close(proton::transport& t) override {
        std::lock_guard<std::mutex> l(m); if (t.connection() == conn) closed = true; notify();
    }

    template <class P> bool wait(int ms, P pred) {
        std::unique_lock<std::mutex> l(m);
        return cv.wait_for(l, milliseconds(ms), pred);
    }
    // work for the connection's thread (proton::work_queue::add, work_queue.hpp; examples/multithreaded_client.cpp)
    void run(std::function<void()> f) { wq->add(f); }
};

int main() {
    app h;
    proton::container container(h, "amqp-conformance-client");
    // container::auto_stop(false) (container.hpp): the driver, not the last connection, decides when it stops
    container.auto_stop(false);
    // examples/multithreaded_client.cpp: `std::thread container_thread([&]() { container.run(); });`
    std::thread runner([&]() { container.run(); });
    std::cout << "{\"id\":0,\"ok\":true,\"ready\":true,\"library\":\"qpid-proton-cpp\",\"version\":"
              << q(std::to_string(PN_VERSION_MAJOR) + "." + std::to_string(PN_VERSION_MINOR) + "." +
                   std::to_string(PN_VERSION_POINT)) << "}" << std::endl;
    bool manual = false;
    std::string line;
    while (std::getline(std::cin, line)) {
        if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
        auto a = parse(line);
        std::string op = a["op"], id = a.count("id") ? a["id"] : "0";
        if (op == "exit") break;
        auto t0 = steady_clock::now();
        std::ostringstream body;
        bool ok = true;
        std::string error;
        try {
            if (op == "connect") {
                std::string url = a["url"];
                {   // a fresh connection per case: nothing of the last one counts
                    std::lock_guard<std::mutex> l(h.m);
                    h.opened = h.closed = h.receiver_open = h.sender_open = false;
                    h.conn = proton::connection(); h.wq = nullptr;
                    h.inbox.clear(); h.events.clear(); h.drains.clear(); h.to_send = 0;
                }
                // container::connect(url, connection_options) (container.hpp; `returned<connection>` "is thread-safe",
                // returned.hpp; examples/multithreaded_client.cpp
                // `container.open_sender(url, ...)` from another thread); SASL as the
                // scripted broker offers it: connection_options::sasl_allowed_mechs (connection_options.hpp).
                proton::connection_options co;
                co.sasl_allowed_mechs("ANONYMOUS");
                co.idle_timeout(proton::duration(0));
                container.connect(url, co);
                if (!h.wait(num(a, "timeout_ms", 5000), [&] { return h.opened || !h.events.empty(); }))
                    throw std::runtime_error("no connection open within the timeout");
                if (!h.opened) throw std::runtime_error("the connection failed");
            } else if (op == "receiver") {
                int credit = num(a, "credit", 0);
                manual = credit == 0;
                std::string address = a["address"];
                // connection::open_receiver(address, receiver_options().credit_window(N)) (receiver_options.hpp:
                // "Automatically replenish credit for flow control up to count"; 0: the application adds credit
                // itself with receiver::add_credit).
                { std::lock_guard<std::mutex> l(h.m); h.receiver_open = false; }
                h.run([&h, address, credit]() { h.conn.open_receiver(address, proton::receiver_options().credit_window(credit)); });
                if (!h.wait(5000, [&] { return h.receiver_open; })) throw std::runtime_error("the receiver did not open");
                body << ",\"api\":" << q(manual ? "open_receiver(credit_window(0)); add_credit(1) per receive; at its timeout drain() and on_receiver_drain_finish"
                                                : "open_receiver(credit_window(" + std::to_string(credit) + ")), on_message");
            } else if (op == "receive") {
                int count = num(a, "count", 1), wait = num(a, "timeout_ms", 1000);
                std::vector<std::string> got;
                bool timeout = false;
                for (int i = 0; i < count; i++) {
                    bool have;
                    { std::lock_guard<std::mutex> l(h.m); have = !h.inbox.empty(); }
                    if (!have && manual) {
                        // receiver::add_credit (receiver.hpp: "Increment the credit available to the sender").
                        h.run([&h]() { if (h.rcv.credit() == 0) h.rcv.add_credit(1); });
                    }
                    if (!h.wait(wait, [&] { return !h.inbox.empty() || !h.events.empty(); }) || h.inbox.empty()) {
                        if (manual) {
                            // receiver::drain (receiver.hpp: "Commence a drain cycle ... An on_receiver_drain_finish
                            // event will be generated when the outstanding drained credit reaches zero").
                            { std::lock_guard<std::mutex> l(h.m); h.drained = false; }
                            h.run([&h]() { if (h.rcv.credit() > 0 && !h.rcv.draining()) h.rcv.drain(); else { std::lock_guard<std::mutex> l(h.m); h.drained = true; h.notify(); } });
                            h.wait(wait, [&] { return h.drained; });
                            std::lock_guard<std::mutex> l(h.m);
                            while (!h.inbox.empty()) { got.push_back(h.inbox.front()); h.inbox.pop_front(); }
                        }
                        timeout = true;
                        break;
                    }
                    std::lock_guard<std::mutex> l(h.m);
                    got.push_back(h.inbox.front());
                    h.inbox.pop_front();
                }
                body << ",\"messages\":[";
                for (size_t i = 0; i < got.size(); i++) body << (i ? "," : "") << q(got[i]);
                body << "],\"timeout\":" << (timeout ? "true" : "false");
            } else if (op == "stop") {
                // receiver::close (link.hpp / endpoint.hpp close()).
                h.run([&h]() { h.rcv.close(); });
                body << ",\"api\":" << q("receiver.close()");
            } else if (op == "sender") {
                std::string address = a["address"];
                // connection::open_sender(address) (examples/simple_send.cpp `c.open_sender(url, co)`).
                { std::lock_guard<std::mutex> l(h.m); h.sender_open = false; }
                h.run([&h, address]() { h.conn.open_sender(address); });
                if (!h.wait(5000, [&] { return h.sender_open; })) throw std::runtime_error("the sender did not open");
                body << ",\"api\":" << q("open_sender; on_sendable sends while credit() > 0; on_sender_drain_start -> return_credit()");
            } else if (op == "send") {
                int count = num(a, "count", 1), wait = num(a, "timeout_ms", 5000);
                int before;
                {
                    std::lock_guard<std::mutex> l(h.m);
                    h.to_send = count; h.next_body = 0; before = h.sent;
                }
                // the messages go out from on_sendable as credit allows (examples/simple_send.cpp); a first
                // attempt in case the credit is already there.
                h.run([&h]() { h.on_sendable(h.snd); });
                int done = 0;
                while (true) {
                    bool progressed = h.wait(wait, [&] { return h.to_send == 0 || h.sent != before + done || !h.events.empty(); });
                    std::lock_guard<std::mutex> l(h.m);
                    done = h.sent - before;
                    if (h.to_send == 0) break;
                    if (!progressed || !h.events.empty()) {
                        h.to_send = 0;
                        ok = false;
                        error = h.events.empty() ? "no credit to send m" + std::to_string(done) + " within " + std::to_string(wait) + " ms"
                                                 : "the library reported an error while sending";
                        break;
                    }
                }
                body << ",\"sent\":" << done;
            } else if (op == "poll") {
                // what happened since the last answer: `events`, `drains` (clients/PROTOCOL.md)
            } else if (op == "close") {
                // connection::close (endpoint.hpp); on_connection_close when the broker answered.
                h.run([&h]() { h.conn.close(); });
                h.wait(2000, [&] { return h.closed; });
            } else {
                throw std::runtime_error("unknown op " + op);
            }
        } catch (const std::exception& e) {
            ok = false;
            error = e.what();
        }
        std::ostringstream outl;
        outl << "{\"id\":" << id << ",\"ok\":" << (ok ? "true" : "false");
        if (!ok) outl << ",\"error\":" << q(error);
        outl << body.str();
        {
            std::lock_guard<std::mutex> l(h.m);
            if (!h.events.empty()) {
                outl << ",\"events\":[";
                for (size_t i = 0; i < h.events.size(); i++) outl << (i ? "," : "") << q(h.events[i]);
                outl << "]";
                h.events.clear();
            }
            if (!h.drains.empty()) {
                outl << ",\"drains\":[";
                for (size_t i = 0; i < h.drains.size(); i++) outl << (i ? "," : "") << h.drains[i];
                outl << "]";
                h.drains.clear();
            }
        }
        outl << ",\"ms\":" << duration_cast<milliseconds>(steady_clock::now() - t0).count() << "}";
        std::cout << outl.str() << std::endl;
    }
    // container::stop (container.hpp), then the container thread ends (examples/multithreaded_client.cpp join)
    container.stop();
    runner.join();
    return 0;
}
