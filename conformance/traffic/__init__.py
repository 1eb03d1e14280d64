"""Judging real AMQP 1.0 traffic: capture files, the suite's transcripts, a recording proxy (`observe`).

The room of `amqp-conformance check` and `observe`: `judge` (sans-IO: one connection's two byte streams to
findings about both endpoints), `pcap` (sans-IO: pcap / pcapng files to TCP streams), `check` (the command
over captures and transcripts, a run directory of its results), `observe` (the proxy). Nothing depends on it.
"""
