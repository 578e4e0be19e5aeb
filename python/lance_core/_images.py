"""The image extension types of `lance_core.arrow` (pylance's `lance.arrow` image
types): URIs of images, encoded images and decoded image tensors, with their arrays and
scalars. `lance_core.arrow` names and registers them with pyarrow; the helpers both of its
halves use (`_is_ext`, `_REPR_MODULE`) live here, in the lower module."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Callable, Iterable, Optional, Sequence, Tuple, Union

import pyarrow as pa

IMAGE_URI_EXT_NAME = "lance.arrow.image_uri"
ENCODED_IMAGE_EXT_NAME = "lance.arrow.encoded_image"
FIXED_SHAPE_IMAGE_TENSOR_EXT_NAME = "lance.arrow.fixed_shape_image_tensor"

# Array reprs use the public module name pylance users know (and its tests match on).
_REPR_MODULE = "lance.arrow"

# The default storage type of encoded images (one instance, used as an argument default).
_BINARY = pa.binary()


def _is_ext(typ: Any, name: str) -> bool:
    return isinstance(typ, pa.BaseExtensionType) and typ.extension_name == name


def _check_storage(storage_type: pa.DataType, allowed: Sequence[pa.DataType], what: str):
    if storage_type not in allowed:
        raise ValueError(f"{what} storage must be one of {', '.join(map(str, allowed))}, got {storage_type}")


class _StoredImageType(pa.ExtensionType):
    """An image extension type with no parameters beyond its storage type (URIs or
    encoded files): subclasses name the extension, the storage types allowed and their
    array and scalar classes."""

    _name: str = ""
    _allowed: Tuple[pa.DataType, ...] = ()
    _what: str = ""

    def __init__(self, storage_type: Optional[pa.DataType] = None):
        storage_type = self._allowed[0] if storage_type is None else storage_type
        _check_storage(storage_type, self._allowed, self._what)
        super().__init__(storage_type, self._name)

    def __arrow_ext_serialize__(self) -> bytes:
        return b""

    @classmethod
    def __arrow_ext_deserialize__(cls, storage_type, serialized):
        return cls(storage_type)


class ImageURIType(_StoredImageType):
    """``lance.arrow.image_uri``: URIs (or local paths) of images, in string or large_string."""

    _name, _allowed, _what = IMAGE_URI_EXT_NAME, (pa.string(), pa.large_string()), "image URI"

    def __arrow_ext_class__(self):
        return ImageURIArray

    def __arrow_ext_scalar_class__(self):
        return ImageURIScalar


class EncodedImageType(_StoredImageType):
    """``lance.arrow.encoded_image``: image files (PNG, JPEG, ...) as bytes, in binary or
    large_binary. The format is not recorded; decoders tell it from the bytes."""

    _name, _allowed, _what = ENCODED_IMAGE_EXT_NAME, (pa.binary(), pa.large_binary()), "encoded image"

    def __arrow_ext_class__(self):
        return EncodedImageArray

    def __arrow_ext_scalar_class__(self):
        return EncodedImageScalar


class FixedShapeImageTensorType(pa.ExtensionType):
    """``lance.arrow.fixed_shape_image_tensor``: decoded images of one shape (for example
    ``(height, width, channels)``), each a ``fixed_size_list<arrow_type>`` of the product of
    the shape; the shape is serialized as JSON ``{"shape": [...]}``."""

    def __init__(self, arrow_type: pa.DataType, shape: Sequence[int]):
        shape = tuple(int(d) for d in shape)
        if not shape or any(d < 0 for d in shape):
            raise ValueError(f"an image tensor shape needs one or more sizes >= 0, got {shape}")
        self.shape = shape
        self.arrow_type = arrow_type
        super().__init__(pa.list_(arrow_type, math.prod(shape)), FIXED_SHAPE_IMAGE_TENSOR_EXT_NAME)

    @property
    def value_type(self) -> pa.DataType:
        return self.arrow_type

    def __arrow_ext_serialize__(self) -> bytes:
        return json.dumps({"shape": list(self.shape)}).encode()

    @classmethod
    def __arrow_ext_deserialize__(cls, storage_type, serialized):
        shape = json.loads(bytes(serialized).decode())["shape"]
        if not pa.types.is_fixed_size_list(storage_type) or storage_type.list_size != math.prod(shape):
            raise TypeError(f"{FIXED_SHAPE_IMAGE_TENSOR_EXT_NAME} of shape {shape} cannot have storage {storage_type}")
        return cls(storage_type.value_type, shape)

    def __eq__(self, other):
        if isinstance(other, FixedShapeImageTensorType):
            return self.storage_type == other.storage_type and self.shape == other.shape
        return super().__eq__(other)

    def __ne__(self, other):  # pyarrow's own __ne__ would not see the shape
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    def __arrow_ext_class__(self):
        return FixedShapeImageTensorArray

    def __arrow_ext_scalar_class__(self):
        return FixedShapeImageTensorScalar


def _is_canonical_tensor(typ: pa.DataType) -> bool:
    return _is_ext(typ, "arrow.fixed_shape_tensor")


class ImageArray(pa.ExtensionArray):
    """Base class of the image arrays; :meth:`from_array` picks the right one."""

    def __repr__(self) -> str:
        return f"<{_REPR_MODULE}.{type(self).__name__} object at 0x{id(self):016x}>\n{self.to_pylist()!r}"

    @classmethod
    def from_array(cls, images) -> "ImageArray":
        """An image array for ``images``:

        - strings (an Arrow string or large_string array, or an iterable of str / Path): URIs,
          an :class:`ImageURIArray`;
        - bytes (an Arrow binary or large_binary array, or an iterable of bytes): encoded
          images, an :class:`EncodedImageArray`;
        - an Arrow ``fixed_shape_tensor`` array: a :class:`FixedShapeImageTensorArray` of the
          same shape;
        - an image array (of this module, or with one of the image extension names): itself
          (re-typed with this module's classes).
        """
        if isinstance(images, pa.ChunkedArray):
            images = images.combine_chunks()
        if isinstance(images, (ImageURIArray, EncodedImageArray, FixedShapeImageTensorArray)):
            return images
        if isinstance(images, pa.ExtensionArray):
            typ = images.type
            if _is_ext(typ, IMAGE_URI_EXT_NAME):
                return ImageURIArray.from_storage(ImageURIType(typ.storage_type), images.storage)
            if _is_ext(typ, ENCODED_IMAGE_EXT_NAME):
                return EncodedImageArray.from_storage(EncodedImageType(typ.storage_type), images.storage)
            if _is_ext(typ, FIXED_SHAPE_IMAGE_TENSOR_EXT_NAME):
                shape = json.loads(typ.__arrow_ext_serialize__().decode())["shape"]
                new_type = FixedShapeImageTensorType(typ.storage_type.value_type, shape)
                return FixedShapeImageTensorArray.from_storage(new_type, images.storage)
            if _is_canonical_tensor(typ):
                new_type = FixedShapeImageTensorType(typ.value_type, typ.shape)
                return FixedShapeImageTensorArray.from_storage(new_type, images.storage)
            raise TypeError(f"cannot make an image array from extension type {typ.extension_name}")
        if isinstance(images, pa.Array):
            if images.type in (pa.string(), pa.large_string()):
                return ImageURIArray.from_storage(ImageURIType(images.type), images)
            if images.type in (pa.binary(), pa.large_binary()):
                return EncodedImageArray.from_storage(EncodedImageType(images.type), images)
            raise TypeError(f"cannot make an image array from an Arrow array of {images.type}")
        if isinstance(images, (str, bytes)) or not isinstance(images, Iterable):
            raise TypeError(f"cannot make an image array from {type(images).__name__}")
        items = list(images)
        if items and all(isinstance(x, (bytes, bytearray, memoryview)) or x is None for x in items) \
                and any(x is not None for x in items):
            return EncodedImageArray.from_storage(EncodedImageType(), pa.array(items, type=pa.binary()))
        return ImageURIArray.from_uris(items)


def _read_uri(uri: str) -> bytes:
    """The bytes at a URI: http(s) through urllib, a local path directly, anything else through
    a pyarrow filesystem (file://, s3://, gs://, ...)."""
    from urllib.parse import urlparse

    scheme = urlparse(uri).scheme
    if scheme in ("http", "https"):
        from urllib.request import urlopen

        with urlopen(uri) as response:
            return response.read()
    if len(scheme) <= 1:  # no scheme, or a Windows drive letter: a local path
        return Path(uri).read_bytes()
    from pyarrow import fs

    filesystem, path = fs.FileSystem.from_uri(uri)
    with filesystem.open_input_stream(path) as stream:
        return stream.read()


class ImageURIArray(ImageArray):
    """Array of image locations: URIs (``file://``, ``s3://``, ``http(s)://``, ...) or local
    paths, readable from this machine."""

    @classmethod
    def from_uris(cls, uris: Union[pa.Array, Iterable[Union[str, Path]]]) -> "ImageURIArray":
        """An ImageURIArray of an Arrow string / large_string array, or of an iterable of str or
        Path (None for a null)."""
        if isinstance(uris, pa.ChunkedArray):
            uris = uris.combine_chunks()
        if isinstance(uris, pa.Array):
            if uris.type not in (pa.string(), pa.large_string()):
                raise TypeError(f"image URIs must be strings, got {uris.type}")
            storage = uris
        elif isinstance(uris, (str, bytes)) or not isinstance(uris, Iterable):
            raise TypeError(f"cannot make an ImageURIArray from {type(uris).__name__}")
        else:
            storage = pa.array([None if u is None else str(u) for u in uris], type=pa.string())
        return cls.from_storage(ImageURIType(storage.type), storage)

    def read_uris(self, storage_type: pa.DataType = _BINARY) -> "EncodedImageArray":
        """Read every image into memory: an :class:`EncodedImageArray` (nulls stay null).
        ``storage_type=pa.large_binary()`` holds more than 2 GiB of images."""
        images = [None if uri is None else _read_uri(uri) for uri in self.storage.to_pylist()]
        return EncodedImageArray.from_storage(EncodedImageType(storage_type), pa.array(images, type=storage_type))


def _pillow_decode(images: pa.Array):
    import io

    import numpy as np
    from PIL import Image

    return np.stack([np.asarray(Image.open(io.BytesIO(data))) for data in images.to_pylist()])


def _pillow_encoder(storage_type: pa.DataType):
    def encode(tensors) -> pa.Array:
        import io

        from PIL import Image

        encoded = []
        for pixels in tensors:
            with io.BytesIO() as buffer:
                Image.fromarray(pixels).save(buffer, format="PNG")
                encoded.append(buffer.getvalue())
        return pa.array(encoded, type=storage_type)

    return encode


def _have_pillow() -> bool:
    try:
        import PIL  # noqa: F401
    except ImportError:
        return False
    return True


class EncodedImageArray(ImageArray):
    """Array of encoded images (any format; the bytes say which)."""

    def __repr__(self) -> str:
        head = f"<{_REPR_MODULE}.{type(self).__name__} object at 0x{id(self):016x}>"
        if len(self) == 0:
            return head + "\n[]"
        first = self.storage[0].as_py()
        if first is not None and _have_pillow():
            import io

            from PIL import Image

            try:
                head += f"\n[{Image.open(io.BytesIO(first))!r}, ..]"
            except Exception:  # not an image Pillow knows: show the bytes only
                pass
        return f"{head}\n{first if first is None else first[:30]!r}"

    def to_tensor(self, decoder: Optional[Callable[[pa.Array], Any]] = None) -> "FixedShapeImageTensorArray":
        """Decode the images: a :class:`FixedShapeImageTensorArray` (every image must have the
        same shape).

        ``decoder`` takes the storage (binary) array and returns a numpy array of shape
        ``(n, *image_shape)`` or an Arrow ``fixed_shape_tensor`` array; by default Pillow
        decodes."""
        if decoder is None:
            if not _have_pillow():
                raise ValueError("No image decoder available: install Pillow or pass a decoder")
            decoder = _pillow_decode
        decoded = decoder(self.storage)
        if isinstance(decoded, pa.ExtensionArray) and _is_canonical_tensor(decoded.type):
            value_type, shape, storage = decoded.type.value_type, decoded.type.shape, decoded.storage
        else:
            import numpy as np

            decoded = np.asarray(decoded)
            value_type, shape = pa.from_numpy_dtype(decoded.dtype), decoded.shape[1:]
            storage = pa.FixedShapeTensorArray.from_numpy_ndarray(np.ascontiguousarray(decoded)).storage
        return FixedShapeImageTensorArray.from_storage(FixedShapeImageTensorType(value_type, shape), storage)


class FixedShapeImageTensorArray(ImageArray):
    """Array of decoded images, each a tensor of the type's shape."""

    def to_numpy(self, zero_copy_only: bool = False, writable: bool = False):
        """A numpy array of shape ``(len(self), *shape)``."""
        tensor_type = pa.fixed_shape_tensor(self.type.arrow_type, list(self.type.shape))
        tensors = pa.ExtensionArray.from_storage(tensor_type, self.storage)
        values = tensors.to_numpy_ndarray()
        return values.copy() if writable else values

    def to_encoded(self, encoder: Optional[Callable[[Any], Any]] = None,
                   storage_type: pa.DataType = _BINARY) -> EncodedImageArray:
        """Encode the images: an :class:`EncodedImageArray`. ``encoder`` takes the numpy array
        of :meth:`to_numpy` and returns the encoded images (an Arrow binary array or a sequence
        of bytes); by default Pillow writes PNG."""
        if encoder is None:
            if not _have_pillow():
                raise ValueError("No image encoder available: install Pillow or pass an encoder")
            encoder = _pillow_encoder(storage_type)
        encoded = encoder(self.to_numpy())
        if isinstance(encoded, pa.ChunkedArray):
            encoded = encoded.combine_chunks()
        if not isinstance(encoded, pa.Array) or encoded.type != storage_type:
            encoded = pa.array(encoded, type=storage_type)
        return EncodedImageArray.from_storage(EncodedImageType(storage_type), encoded)


class ImageScalar(pa.ExtensionScalar):
    """One element of an image array; ``as_py()`` gives the stored value (str, bytes, or the
    flat list of pixel values)."""

    def as_py(self, **kwargs):
        return None if self.value is None else self.value.as_py(**kwargs)


class ImageURIScalar(ImageScalar):
    pass


class EncodedImageScalar(ImageScalar):
    pass


class FixedShapeImageTensorScalar(ImageScalar):
    pass
