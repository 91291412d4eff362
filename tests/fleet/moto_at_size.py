# SPDX-License-Identifier: Apache-2.0
"""Makes moto's S3 serve large objects and large listings in proportion to what is asked.

Imported by s3_server.py; install() changes moto's classes in this process. Moto keeps every
object in a spooled temporary file, but three of its paths cost in proportion to the whole
object or the whole bucket where S3's cost in proportion to the request:

 - completing a multipart upload joins the parts in memory (a 6 GiB object needed three 6 GiB
   copies at once): here the parts are copied into a temporary file, 16 MiB at a time, which
   becomes the object's;
 - a ranged GET reads the whole object and then slices it (each 64 MiB range of a 2 GiB object
   read 2 GiB): here only the range is read;
 - a ListObjectsV2 page walks every key of the bucket and builds its answer with moto's generic
   serializer (0.3 s a page of 1,000 keys): here the names under the prefix are sorted and the
   page of at most 1,000 is written with ElementTree. Requests with parameters gpuq never
   sends (delimiter, start-after, encoding-type, fetch-owner) still go to moto's own code.

Nothing here changes what a request answers: the same checks, the same status codes, the same
headers, the same bytes; the fleet's contract tests run against it.
"""
import base64
import codecs
import functools
import shutil
import tempfile
import threading
import xml.etree.ElementTree as ElementTree

from moto.s3 import models, responses
from moto.s3.exceptions import EntityTooSmall, InvalidPart, MalformedXML
from moto.utilities.utils import md5_hash

COPY_CHUNK = 16 * 1024 * 1024
S3_NAMESPACE = "http://s3.amazonaws.com/doc/2006-03-01/"
TOKEN_PREFIX = "gpuq1."
LIST_PARAMETERS = {"list-type", "prefix", "continuation-token", "max-keys"}
MAX_KEYS = 1000

# Set while a single-range GET is being answered, for the thread that answers it.
serving = threading.local()


# --- multipart: join the parts on disk -------------------------------------------------------


def complete_without_joining(multipart, body):
    """FakeMultipart.complete's checks and ETag, with the parts kept by reference."""
    decode_hex = codecs.getdecoder("hex_codec")
    md5s = bytearray()
    parts = []
    for number, etag in body:
        part = multipart.parts.get(number)
        if part is None or part.etag.replace('"', "") != etag.replace('"', ""):
            raise InvalidPart()
        if parts and parts[-1].contentsize < models.S3_UPLOAD_PART_MIN_SIZE:
            raise EntityTooSmall()
        md5s.extend(decode_hex(part.etag.replace('"', ""))[0])
        parts.append(part)
    if not parts:
        raise MalformedXML
    multipart.joined = join_parts(parts)  # now: moto disposes of the parts when it is done
    whole = md5_hash()
    whole.update(bytes(md5s))
    return b"", f"{whole.hexdigest()}-{len(parts)}", None


def join_parts(parts):
    joined = tempfile.SpooledTemporaryFile(parts[0]._max_buffer_size)
    for part in parts:
        with part.lock:
            part._value_buffer.seek(0)
            shutil.copyfileobj(part._value_buffer, joined, COPY_CHUNK)
    return joined, sum(part.contentsize for part in parts)


def give_key_its_bytes(key, joined):
    with key.lock:
        key._value_buffer.close()
        key._value_buffer, key.contentsize = joined


def patch_multipart_completion():
    complete_upload = models.S3Backend.complete_multipart_upload

    @functools.wraps(complete_upload)
    def complete_upload_on_disk(self, bucket_name, multipart_id, body):
        multipart = self.get_bucket(bucket_name).multiparts.get(multipart_id)
        if multipart is None or multipart.metadata.get("x-amz-checksum-algorithm"):
            return complete_upload(self, bucket_name, multipart_id, body)
        multipart.complete = functools.partial(complete_without_joining, multipart)
        key = complete_upload(self, bucket_name, multipart_id, body)
        if key is not None:
            give_key_its_bytes(key, multipart.joined)
        return key

    models.S3Backend.complete_multipart_upload = complete_upload_on_disk


# --- ranged GET: read the range only ---------------------------------------------------------


class KeyBytes:
    """A key's bytes as moto's range handling uses them: a length, and slices read on demand."""

    def __init__(self, key):
        self.key = key

    def __len__(self):
        return self.key.contentsize

    def __bool__(self):
        return self.key.contentsize > 0

    def __getitem__(self, wanted):
        start, stop, _ = wanted.indices(self.key.contentsize)
        with self.key.lock:
            self.key._value_buffer.seek(start)
            return self.key._value_buffer.read(max(0, stop - start))

    def whole(self):
        return self[0 : len(self)]


def single_range(request):
    value = request.headers.get("range", "")
    return request.method == "GET" and value.startswith("bytes=") and "," not in value


def patch_ranged_get():
    value_property = models.FakeKey.value

    def value_for_ranges(self):
        if getattr(serving, "range", False):
            return KeyBytes(self)
        return value_property.fget(self)

    models.FakeKey.value = property(value_for_ranges, value_property.fset)

    key_response = responses.S3Response.key_response

    @functools.wraps(key_response)
    def key_response_reading_ranges(self, request, full_url, headers):
        serving.range = single_range(request)
        try:
            status, response_headers, content = key_response(self, request, full_url, headers)
        finally:
            serving.range = False
        if isinstance(content, KeyBytes):  # a path that did not slice it: the whole object
            content = content.whole()
        return status, response_headers, content

    responses.S3Response.key_response = key_response_reading_ranges


# --- ListObjectsV2: a page in proportion to the page -----------------------------------------


def encode_token(last_key):
    return TOKEN_PREFIX + base64.urlsafe_b64encode(last_key.encode()).decode()


def decode_token(token):
    if not token.startswith(TOKEN_PREFIX):
        return None
    try:
        return base64.urlsafe_b64decode(token[len(TOKEN_PREFIX) :].encode()).decode()
    except ValueError:
        return None


def list_page_xml(bucket_name, prefix, max_keys, keys, next_token):
    root = ElementTree.Element("ListBucketResult", xmlns=S3_NAMESPACE)

    def add(parent, name, text):
        ElementTree.SubElement(parent, name).text = text

    add(root, "Name", bucket_name)
    add(root, "Prefix", prefix)
    add(root, "MaxKeys", str(max_keys))
    add(root, "KeyCount", str(len(keys)))
    add(root, "IsTruncated", "true" if next_token else "false")
    for key in keys:
        item = ElementTree.SubElement(root, "Contents")
        add(item, "Key", key.name)
        add(item, "LastModified", key.last_modified_ISO8601)
        add(item, "ETag", key.etag)
        add(item, "Size", str(key.size))
        add(item, "StorageClass", key.storage_class)
    if next_token:
        add(root, "NextContinuationToken", next_token)
    return ElementTree.tostring(root, encoding="UTF-8", xml_declaration=True)


def patch_listing():
    list_objects_v2 = responses.S3Response.list_objects_v2

    @functools.wraps(list_objects_v2)
    def list_page(self):
        query = self._get_querystring(self.request, self.uri)  # as sent (moto adds to querystring)
        token = query.get("continuation-token", [None])[0]
        after = decode_token(token) if token else ""
        try:
            max_keys = min(MAX_KEYS, int(query.get("max-keys", [MAX_KEYS])[0]))
        except ValueError:
            max_keys = -1
        if set(query) - LIST_PARAMETERS or after is None or max_keys < 1:
            return list_objects_v2(self)
        bucket = self.backend.get_bucket(self.bucket_name)
        prefix = query.get("prefix", [""])[0] or ""
        if isinstance(prefix, bytes):
            prefix = prefix.decode("utf-8")
        names = sorted(n for n in dict.keys(bucket.keys) if n.startswith(prefix) and n > after)
        keys = []
        for name in names:
            key = bucket.keys.get(name)
            if key is None or isinstance(key, models.FakeDeleteMarker):
                continue
            if len(keys) == max_keys:
                break
            keys.append(key)
        else:
            name = None
        next_token = encode_token(keys[-1].name) if name is not None and keys else None
        body = list_page_xml(bucket.name, prefix, max_keys, keys, next_token)
        self.data["Action"] = "ListObjectsV2"
        return 200, {"Content-Type": "application/xml"}, body

    responses.S3Response.list_objects_v2 = list_page


def install():
    patch_multipart_completion()
    patch_ranged_get()
    patch_listing()
