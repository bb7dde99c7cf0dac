#!/usr/bin/python3
# A bucket that misbehaves, for perfrecctl's bucket client: the objects are
# the files under ROOT (a file's path below ROOT is its key), served
# unsigned on loopback by ListObjectsV2, GET and PUT, as s3rver would,
# except that with --same-token every listing page says it is
# truncated and hands out the same continuation token again.  The port
# chosen goes to PORTFILE once the server listens; each request is counted
# in ROOT/../requests.
import argparse
import os
import sys
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from xml.sax.saxutils import escape


def xml_text(s):
    # Control characters are not XML 1.0; S3 escapes them as character references.
    return "".join(c if c in "\t" or ord(c) >= 0x20 else "&#%d;" % ord(c) for c in escape(s))


class Bucket(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def count(self):
        with open(self.server.counter, "a") as f:
            f.write("x\n")

    def send(self, code, body, ctype="application/xml"):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def keys(self, prefix):
        out = []
        for d, _, files in os.walk(self.server.root):
            for f in files:
                k = os.path.relpath(os.path.join(d, f), self.server.root)
                if k.startswith(prefix):
                    out.append(k)
        return sorted(out)

    def do_GET(self):
        self.count()
        url = urllib.parse.urlsplit(self.path)
        q = urllib.parse.parse_qs(url.query)
        path = urllib.parse.unquote(url.path)
        bucket = "/" + self.server.bucket
        if q.get("list-type") == ["2"] and path.rstrip("/") == bucket:
            self.list(q.get("prefix", [""])[0], q.get("continuation-token", [""])[0])
            return
        if not path.startswith(bucket + "/"):
            self.send(404, b"<Error><Code>NoSuchBucket</Code></Error>")
            return
        f = os.path.join(self.server.root, path[len(bucket) + 1:])
        if not os.path.isfile(f):
            self.send(404, b"<Error><Code>NoSuchKey</Code></Error>")
            return
        with open(f, "rb") as fh:
            self.send(200, fh.read(), "application/octet-stream")

    def do_PUT(self):
        self.count()
        path = urllib.parse.unquote(urllib.parse.urlsplit(self.path).path)
        bucket = "/" + self.server.bucket + "/"
        key = path[len(bucket):] if path.startswith(bucket) else ""
        if not key or ".." in key.split("/"):
            self.send(400, b"<Error><Code>InvalidArgument</Code></Error>")
            return
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        f = os.path.join(self.server.root, key)
        os.makedirs(os.path.dirname(f), exist_ok=True)
        with open(f, "wb") as fh:
            fh.write(body)
        self.send(200, b"")

    def list(self, prefix, token=""):
        keys = self.keys(prefix)
        parts = ['<?xml version="1.0" encoding="UTF-8"?>',
                 '<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">',
                 "<Name>%s</Name><Prefix>%s</Prefix>" % (self.server.bucket, xml_text(prefix))]
        for k in keys:
            st = os.stat(os.path.join(self.server.root, k))
            parts.append("<Contents><Key>%s</Key><LastModified>2026-11-23T14:10:00.000Z</LastModified>"
                         "<Size>%d</Size></Contents>" % (xml_text(k), st.st_size))
        if self.server.endless:
            n = int(token.split("-")[-1]) + 1 if token else 1
            parts.append("<IsTruncated>true</IsTruncated>"
                         "<NextContinuationToken>page-%d</NextContinuationToken>" % n)
        elif self.server.same_token:
            parts.append("<IsTruncated>true</IsTruncated>"
                         "<NextContinuationToken>same-page-again</NextContinuationToken>")
        else:
            parts.append("<IsTruncated>false</IsTruncated>")
        parts.append("</ListBucketResult>")
        self.send(200, "".join(parts).encode())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("root")
    ap.add_argument("portfile")
    ap.add_argument("--bucket", default="perf")
    ap.add_argument("--same-token", action="store_true")
    ap.add_argument("--endless", action="store_true")
    a = ap.parse_args()
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Bucket)
    srv.root = a.root
    srv.bucket = a.bucket
    srv.same_token = a.same_token
    srv.endless = a.endless
    srv.counter = os.path.join(os.path.dirname(os.path.abspath(a.root)), "requests")
    tmp = a.portfile + ".tmp"
    with open(tmp, "w") as f:
        f.write("%d\n" % srv.server_address[1])
    os.rename(tmp, a.portfile)
    srv.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
