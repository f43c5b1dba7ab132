"""A reference OTLP profiles receiver for tests/otlp.rs: not netto's code.

It decodes what it receives with the pinned PyPI opentelemetry-proto (its
generated profiles modules) and serves OTLP/gRPC (grpcio) and OTLP/HTTP
(the standard library) at once, on loopback ports it picks. It prints
`ports GRPC HTTP` once listening, then one JSON line per export: each
profile's sample type, sample count and value total, the sample attributes'
keys, the resource's attributes, the function names, and how many
locations or mappings carry an address.

With `--decode FILE` it prints the one line of an export written to a file
(`netto report --format otlp`) and exits. With `--ports GRPC HTTP` it listens on those (a receiver started again);
with `--tls CERT KEY` both speak TLS only, with that certificate;
with `--stall`, it accepts and reads every export but never answers: a
receiver that has hung.
"""

import gzip
import json
import ssl
import sys
import threading
import time
from concurrent import futures
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import grpc
from opentelemetry.proto.collector.profiles.v1development import (
    profiles_service_pb2 as service,
    profiles_service_pb2_grpc as service_grpc,
)

STALL = "--stall" in sys.argv
LOCK = threading.Lock()


def any_value(value):
    kind = value.WhichOneof("value")
    return getattr(value, kind) if kind else None


def summary(request, protocol, headers=()):
    d = request.dictionary
    strings = list(d.string_table)
    profiles = []
    keys = set()
    for resource_profiles in request.resource_profiles:
        for scope_profiles in resource_profiles.scope_profiles:
            for profile in scope_profiles.profiles:
                for sample in profile.samples:
                    for index in sample.attribute_indices:
                        keys.add(strings[d.attribute_table[index].key_strindex])
                profiles.append(
                    {
                        "type": strings[profile.sample_type.type_strindex],
                        "unit": strings[profile.sample_type.unit_strindex],
                        "samples": len(profile.samples),
                        "total": sum(v for s in profile.samples for v in s.values),
                        "time_unix_nano": profile.time_unix_nano,
                        "duration_nano": profile.duration_nano,
                    }
                )
    resource = {
        a.key: any_value(a.value)
        for rp in request.resource_profiles
        for a in rp.resource.attributes
    }
    return {
        "protocol": protocol,
        # What a receiver would authenticate by: --otlp-headers-file's.
        "headers": {
            k.lower(): v
            for k, v in headers
            if k.lower() == "authorization" or k.lower().startswith("x-")
        },
        "profiles": profiles,
        "attribute_keys": sorted(keys),
        "attribute_values": sorted(
            {str(any_value(a.value)) for a in d.attribute_table[1:]}
        ),
        "resource": resource,
        "functions": sorted({strings[f.name_strindex] for f in d.function_table[1:]}),
        "addresses": sum(1 for l in d.location_table if l.address != 0)
        + sum(1 for m in d.mapping_table if m.memory_start or m.memory_limit),
    }


def report(request, protocol, headers):
    line = json.dumps(summary(request, protocol, headers))
    with LOCK:
        print(line, flush=True)


def stall():
    while True:
        time.sleep(3600)


class Profiles(service_grpc.ProfilesServiceServicer):
    def Export(self, request, context):
        if STALL:
            stall()
        report(request, "grpc", context.invocation_metadata())
        return service.ExportProfilesServiceResponse()


class Http(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        if STALL:
            stall()
        if self.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        request = service.ExportProfilesServiceRequest()
        request.ParseFromString(body)
        if self.path != "/v1development/profiles":
            self.send_response(404)
            self.end_headers()
            return
        report(request, "http/protobuf", self.headers.items())
        answer = service.ExportProfilesServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args):
        pass


def main():
    if "--decode" in sys.argv:
        request = service.ExportProfilesServiceRequest()
        with open(sys.argv[sys.argv.index("--decode") + 1], "rb") as file:
            request.ParseFromString(file.read())
        print(json.dumps(summary(request, "file")))
        return
    ports = (0, 0)
    if "--ports" in sys.argv:
        at = sys.argv.index("--ports")
        ports = (int(sys.argv[at + 1]), int(sys.argv[at + 2]))
    tls = None
    if "--tls" in sys.argv:
        at = sys.argv.index("--tls")
        tls = (sys.argv[at + 1], sys.argv[at + 2])
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    service_grpc.add_ProfilesServiceServicer_to_server(Profiles(), server)
    address = f"127.0.0.1:{ports[0]}"
    if tls:
        with open(tls[0], "rb") as cert, open(tls[1], "rb") as key:
            credentials = grpc.ssl_server_credentials([(key.read(), cert.read())])
        grpc_port = server.add_secure_port(address, credentials)
    else:
        grpc_port = server.add_insecure_port(address)
    server.start()
    http = ThreadingHTTPServer(("127.0.0.1", ports[1]), Http)
    if tls:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(tls[0], tls[1])
        http.socket = context.wrap_socket(http.socket, server_side=True)
    http.daemon_threads = True
    print(f"ports {grpc_port} {http.server_address[1]}", flush=True)
    http.serve_forever()


if __name__ == "__main__":
    main()
