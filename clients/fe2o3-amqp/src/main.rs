//! Client driver for fe2o3-amqp (Rust, tokio): the JSON-lines command protocol of clients/PROTOCOL.md.
//!
//! Each call cites the crate's Readme.md (its example: `Connection::open`, `Session::begin`, `Sender::attach`,
//! `Receiver::attach`, `send`, `recv`, `accept`, `close`, `end`) or the rustdoc of the release under test
//! (src/link/receiver.rs `CreditMode`, `set_credit`, `drain`; src/connection/mod.rs the builder with
//! `sasl_profile`). The library's engines run as tokio tasks while the driver waits for its next command.
use std::time::{Duration, Instant};

use fe2o3_amqp::link::receiver::CreditMode;
use fe2o3_amqp::sasl_profile::SaslProfile;
use fe2o3_amqp::{Connection, Receiver, Sender, Session};
use serde_json::{json, Map, Value};
use tokio::io::{AsyncBufReadExt, BufReader};

struct App {
    conn: Option<fe2o3_amqp::connection::ConnectionHandle<()>>,
    session: Option<fe2o3_amqp::session::SessionHandle<()>>,
    receiver: Option<Receiver>,
    sender: Option<Sender>,
    manual: bool,
    links: u32,
}

fn ms(v: &Value, key: &str, dflt: u64) -> u64 {
    v.get(key).and_then(|x| x.as_u64()).unwrap_or(dflt)
}

impl App {
    async fn run(&mut self, op: &str, a: &Value, out: &mut Map<String, Value>) -> Result<(), String> {
        match op {
            "connect" => {
                let url = a.get("url").and_then(|u| u.as_str()).unwrap_or_default().to_string();
                // Connection::builder().container_id(..).sasl_profile(..).open(url) (src/connection/mod.rs rustdoc
                // "supply the information with `sasl_profile` field of the [`Builder`]"); ANONYMOUS is what the
                // scripted broker offers (SaslProfile::Anonymous, src/sasl_profile/mod.rs).
                let wait = Duration::from_millis(ms(a, "timeout_ms", 5000));
                let open = Connection::builder()
                    .container_id("amqp-conformance-client")
                    .sasl_profile(SaslProfile::Anonymous)
                    .open(url.as_str());
                let mut conn = tokio::time::timeout(wait, open).await.map_err(|_| "open timed out".to_string())?
                    .map_err(|e| format!("{e}"))?;
                // Session::begin(&mut connection) (Readme.md)
                let session = Session::begin(&mut conn).await.map_err(|e| format!("{e}"))?;
                self.conn = Some(conn);
                self.session = Some(session);
                Ok(())
            }
            "receiver" => {
                let credit = a.get("credit").and_then(|c| c.as_u64()).unwrap_or(0) as u32;
                self.manual = credit == 0;
                self.links += 1;
                let address = a.get("address").and_then(|s| s.as_str()).unwrap_or("q").to_string();
                // Receiver::builder().name(..).source(..).credit_mode(..).attach(&mut session) (src/link/builder.rs
                // `credit_mode`; src/link/receiver.rs `CreditMode`: "Manual mode will require the user to manually
                // allocate credit", "Auto: The receiver will automatically re-fill the credit").
                let mode = if self.manual { CreditMode::Manual } else { CreditMode::Auto(credit) };
                let session = self.session.as_mut().ok_or("no session")?;
                let receiver = Receiver::builder()
                    .name(format!("fe2o3-receiver-{}", self.links))
                    .source(address)
                    .credit_mode(mode)
                    .attach(session)
                    .await
                    .map_err(|e| format!("{e}"))?;
                self.receiver = Some(receiver);
                out.insert("api".into(), json!(if self.manual {
                    "credit_mode(CreditMode::Manual); set_credit(1) per receive; at its timeout drain()".to_string()
                } else {
                    format!("credit_mode(CreditMode::Auto({credit})), recv()")
                }));
                Ok(())
            }
            "receive" => {
                let count = ms(a, "count", 1);
                let wait = Duration::from_millis(ms(a, "timeout_ms", 1000));
                let manual = self.manual;
                // the Receiver attached by `receiver` (Readme.md `Receiver::attach`)
                let receiver = self.receiver.as_mut().ok_or("no receiver")?;
                let mut got: Vec<String> = vec![];
                let mut timed_out = false;
                for _ in 0..count {
                    if manual {
                        // Receiver::set_credit (src/link/receiver.rs: "Set the link credit"): one credit for this
                        // get (set, not added: a credit still outstanding is not doubled)
                        receiver.set_credit(1).await.map_err(|e| format!("{e}"))?;
                    }
                    // Receiver::recv (Readme.md `receiver.recv::<String>()`; rustdoc: "This function is
                    // cancel-safe", so a tokio timeout around it loses nothing).
                    match tokio::time::timeout(wait, receiver.recv::<String>()).await {
                        Ok(Ok(delivery)) => {
                            // receiver.accept(&delivery) (Readme.md); for a pre-settled delivery nothing is sent
                            // ("Only deliveries that are found in the local unsettled map", receiver.rs accept_all).
                            let _ = receiver.accept(&delivery).await;
                            got.push(delivery.body().clone());
                        }
                        Ok(Err(e)) => {
                            out.insert("messages".into(), json!(got));
                            return Err(format!("{e}"));
                        }
                        Err(_) => {
                            if manual {
                                // Receiver::drain (src/link/receiver.rs: "This will send a `Flow` performative with
                                // the `drain` field set to true"), then one more bounded recv for a message that
                                // came with the drain.
                                receiver.drain().await.map_err(|e| format!("{e}"))?;
                                if let Ok(Ok(delivery)) = tokio::time::timeout(wait, receiver.recv::<String>()).await {
                                    let _ = receiver.accept(&delivery).await;
                                    got.push(delivery.body().clone());
                                }
                            }
                            timed_out = true;
                            break;
                        }
                    }
                }
                out.insert("messages".into(), json!(got));
                out.insert("timeout".into(), json!(timed_out));
                Ok(())
            }
            "stop" => {
                // receiver.close() (Readme.md: "Detach receiver with closing Detach performatives")
                let receiver = self.receiver.take().ok_or("no receiver")?;
                out.insert("api".into(), json!("receiver.close()"));
                receiver.close().await.map_err(|e| format!("{e}"))
            }
            "sender" => {
                self.links += 1;
                let address = a.get("address").and_then(|s| s.as_str()).unwrap_or("q").to_string();
                let session = self.session.as_mut().ok_or("no session")?;
                // Sender::attach(&mut session, name, address) (Readme.md)
                let sender = Sender::attach(session, format!("fe2o3-sender-{}", self.links), address)
                    .await
                    .map_err(|e| format!("{e}"))?;
                self.sender = Some(sender);
                out.insert("api".into(), json!("Sender::attach, send(msg) (waits for credit and the outcome)"));
                Ok(())
            }
            "send" => {
                let count = ms(a, "count", 1);
                let wait = Duration::from_millis(ms(a, "timeout_ms", 5000));
                let sender = self.sender.as_mut().ok_or("no sender")?;
                let mut sent = 0u64;
                for i in 0..count {
                    // sender.send(..) "Send a message to the broker and wait for outcome (Disposition)"
                    // (Readme.md); Sender::send_with_timeout wraps it in tokio::time::timeout (src/link/sender.rs).
                    match sender.send_with_timeout(format!("m{i}"), wait).await {
                        Ok(Ok(_outcome)) => sent += 1,
                        Ok(Err(e)) => {
                            out.insert("sent".into(), json!(sent));
                            return Err(format!("{e}"));
                        }
                        Err(_) => {
                            out.insert("sent".into(), json!(sent));
                            return Err(format!("m{i} not sent and settled within {} ms", wait.as_millis()));
                        }
                    }
                }
                out.insert("sent".into(), json!(sent));
                Ok(())
            }
            "close" => {
                // Readme.md: sender.close(), receiver.close(), session.end(), connection.close(), each bounded
                let bound = Duration::from_secs(2);
                if let Some(s) = self.sender.take() { let _ = tokio::time::timeout(bound, s.close()).await; }
                if let Some(r) = self.receiver.take() { let _ = tokio::time::timeout(bound, r.close()).await; }
                if let Some(mut s) = self.session.take() { let _ = tokio::time::timeout(bound, s.end()).await; }
                if let Some(mut c) = self.conn.take() { let _ = tokio::time::timeout(bound, c.close()).await; }
                Ok(())
            }
            // what happened since the last answer: the crate hands the application no drain to report
            "poll" => Ok(()),
            other => Err(format!("unknown op {other}")),
        }
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    println!("{}", json!({"id": 0, "ok": true, "ready": true, "library": "fe2o3-amqp",
                          "version": env!("FE2O3_VERSION")}));
    let mut app = App { conn: None, session: None, receiver: None, sender: None, manual: false, links: 0 };
    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        if line.trim().is_empty() { continue; }
        let req: Value = match serde_json::from_str(&line) { Ok(v) => v, Err(_) => continue };
        let op = req.get("op").and_then(|o| o.as_str()).unwrap_or("").to_string();
        if op == "exit" { break; }
        let t0 = Instant::now();
        let mut out = Map::new();
        let result = app.run(&op, &req, &mut out).await;
        out.insert("id".into(), req.get("id").cloned().unwrap_or(json!(0)));
        match result {
            Ok(()) => { out.insert("ok".into(), json!(true)); }
            Err(e) => { out.insert("ok".into(), json!(false)); out.insert("error".into(), json!(e)); }
        }
        out.insert("ms".into(), json!(t0.elapsed().as_millis() as u64));
        println!("{}", Value::Object(out));
    }
}
