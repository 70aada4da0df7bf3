"""Ed25519 verification (libsodium through PyNaCl) on the RFC 8032 test vectors that apply: section 7.1, pure
Ed25519 (the envelope signs with no context and no pre-hash, so 7.2 Ed25519ctx and 7.3 Ed25519ph do not
apply). pycryptodome, which signs, must produce the same signatures, and both libraries must agree on honest
and tampered signatures alike."""

from __future__ import annotations

import pytest
from Crypto.Signature import eddsa
from hypothesis import given, settings
from hypothesis import strategies as st

from pubsub_core.envelope import Signer, Topic, verify_signature
from pubsub_core.envelope.envelope import verify_ed25519

# (secret seed, public key, message, signature), RFC 8032 section 7.1: TEST 1, 2, 3, 1024 and SHA(abc).
_TEST_1024_MESSAGE = (
    "08b8b2b733424243760fe426a4b54908632110a66c2f6591eabd3345e3e4eb98fa6e264bf09efe12ee50f8f54e9f77b1e355f6c5"
    "0544e23fb1433ddf73be84d879de7c0046dc4996d9e773f4bc9efe5738829adb26c81b37c93a1b270b20329d658675fc6ea534e0"
    "810a4432826bf58c941efb65d57a338bbd2e26640f89ffbc1a858efcb8550ee3a5e1998bd177e93a7363c344fe6b199ee5d02e82"
    "d522c4feba15452f80288a821a579116ec6dad2b3b310da903401aa62100ab5d1a36553e06203b33890cc9b832f79ef80560ccb9"
    "a39ce767967ed628c6ad573cb116dbefefd75499da96bd68a8a97b928a8bbc103b6621fcde2beca1231d206be6cd9ec7aff6f6c9"
    "4fcd7204ed3455c68c83f4a41da4af2b74ef5c53f1d8ac70bdcb7ed185ce81bd84359d44254d95629e9855a94a7c1958d1f8ada5"
    "d0532ed8a5aa3fb2d17ba70eb6248e594e1a2297acbbb39d502f1a8c6eb6f1ce22b3de1a1f40cc24554119a831a9aad6079cad88"
    "425de6bde1a9187ebb6092cf67bf2b13fd65f27088d78b7e883c8759d2c4f5c65adb7553878ad575f9fad878e80a0c9ba63bcbcc"
    "2732e69485bbc9c90bfbd62481d9089beccf80cfe2df16a2cf65bd92dd597b0707e0917af48bbb75fed413d238f5555a7a569d80"
    "c3414a8d0859dc65a46128bab27af87a71314f318c782b23ebfe808b82b0ce26401d2e22f04d83d1255dc51addd3b75a2b1ae078"
    "4504df543af8969be3ea7082ff7fc9888c144da2af58429ec96031dbcad3dad9af0dcbaaaf268cb8fcffead94f3c7ca495e056a9"
    "b47acdb751fb73e666c6c655ade8297297d07ad1ba5e43f1bca32301651339e22904cc8c42f58c30c04aafdb038dda0847dd988d"
    "cda6f3bfd15c4b4c4525004aa06eeff8ca61783aacec57fb3d1f92b0fe2fd1a85f6724517b65e614ad6808d6f6ee34dff7310fdc"
    "82aebfd904b01e1dc54b2927094b2db68d6f903b68401adebf5a7e08d78ff4ef5d63653a65040cf9bfd4aca7984a74d371459867"
    "80fc0b16ac451649de6188a7dbdf191f64b5fc5e2ab47b57f7f7276cd419c17a3ca8e1b939ae49e488acba6b965610b5480109c8"
    "b17b80e1b7b750dfc7598d5d5011fd2dcc5600a32ef5b52a1ecc820e308aa342721aac0943bf6686b64b2579376504ccc493d97e"
    "6aed3fb0f9cd71a43dd497f01f17c0e2cb3797aa2a2f256656168e6c496afc5fb93246f6b1116398a346f1a641f3b041e989f791"
    "4f90cc2c7fff357876e506b50d334ba77c225bc307ba537152f3f1610e4eafe595f6d9d90d11faa933a15ef1369546868a7f3a45"
    "a96768d40fd9d03412c091c6315cf4fde7cb68606937380db2eaaa707b4c4185c32eddcdd306705e4dc1ffc872eeee475a64dfac"
    "86aba41c0618983f8741c5ef68d3a101e8a3b8cac60c905c15fc910840b94c00a0b9d0"
)
RFC8032_ED25519 = [
    ("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60",
     "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a", "",
     "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b"),
    ("4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb",
     "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c", "72",
     "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00"),
    ("c5aa8df43f9f837bedb7442f31dcb7b166d38535076f094b85ce3a2e0b4458f7",
     "fc51cd8e6218a1a38da47ed00230f0580816ed13ba3303ac5deb911548908025", "af82",
     "6291d657deec24024827e69c3abe01a30ce548a284743a445e3680d7db5ac3ac18ff9b538d16f290ae67f760984dc6594a7c15e9716ed28dc027beceea1ec40a"),
    ("f5e5767cf153319517630f226876b86c8160cc583bc013744c6bf255f5cc0ee5",
     "278117fc144c72340f67d0f2316e8386ceffbf2b2428c9c51fef7c597f1d426e", _TEST_1024_MESSAGE,
     "0aab4c900501b3e24d7cdf4663326a3a87df5e4843b2cbdb67cbf6e460fec350aa5371b1508f9f4528ecea23c436d94b5e8fcd4f681e30a6ac00a9704a188a03"),
    ("833fe62409237b9d62ec77587520911e9a759cec1d19755b7da901b96dca3d42",
     "ec172b93ad5e563bf4932c70e1245034c35467ef2efd4d64ebf819683467e2bf",
     "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f",
     "dc2a4459e7369633a52b1bf277839a00201009a3efbf3ecb69bea2186c26b58909351fc9ac90b3ecfdfbc7c66431e0303dca179c138ac17ad9bef1177331a704"),
]
VECTORS = [tuple(bytes.fromhex(field) for field in vector) for vector in RFC8032_ED25519]
L = 2**252 + 27742317777372353535851937790883648493
"""The order of the ed25519 base point."""


def _pycryptodome_verifies(public_key: bytes, message: bytes, signature: bytes) -> bool:
    try:
        eddsa.new(eddsa.import_public_key(public_key), "rfc8032").verify(message, signature)
    except ValueError:
        return False
    return True


def test_the_1024_byte_message_is_whole() -> None:
    assert len(VECTORS[3][2]) == 1023  # RFC 8032 "TEST 1024" signs a 1023-octet message


@pytest.mark.parametrize("secret, public, message, signature", VECTORS, ids=["1", "2", "3", "1024", "SHA(abc)"])
def test_rfc8032_vectors(secret: bytes, public: bytes, message: bytes, signature: bytes) -> None:
    key = eddsa.import_private_key(secret)
    assert key.public_key().export_key(format="raw") == public
    assert eddsa.new(key, "rfc8032").sign(message) == signature  # the signer reproduces the vector
    assert verify_ed25519(public, message, signature)
    assert _pycryptodome_verifies(public, message, signature)
    for index in (0, 31, 32, 63):  # R and S, first and last bytes
        forged = bytearray(signature)
        forged[index] ^= 0x01
        assert not verify_ed25519(public, message, bytes(forged))
    assert not verify_ed25519(public, message + b"\x00", signature)
    assert not verify_ed25519(bytes(31) + b"\x01", message, signature)
    s = int.from_bytes(signature[32:], "little")
    assert not verify_ed25519(public, message, signature[:32] + (s + L).to_bytes(32, "little"))  # malleated S


def test_wrong_lengths_are_refused_not_raised() -> None:
    public, message, signature = VECTORS[0][1:]
    assert not verify_ed25519(public[:31], message, signature)
    assert not verify_ed25519(public, message, signature[:63])


def test_a_small_order_key_is_refused() -> None:
    """Under the identity as public key, (R = [S]B, S) verifies any message for a cofactored or lax verifier;
    libsodium refuses small-order keys. Here S = 0, so R is the identity's encoding."""
    identity = (1).to_bytes(32, "little")
    assert not verify_ed25519(identity, b"anything", identity + bytes(32))


@settings(max_examples=40, deadline=None)
@given(seed=st.binary(min_size=32, max_size=32), data=st.binary(max_size=300), flip=st.integers(0, 64 * 8))
def test_envelopes_verify_as_pycryptodome_verified_them(seed: bytes, data: bytes, flip: int) -> None:
    signer = Signer(seed)
    envelope = signer.sign(Topic("polkadot", "upward", "2000"), 7, data)
    assert verify_signature(envelope)
    signature = bytearray(envelope.signature)
    if flip < 64 * 8:
        signature[flip // 8] ^= 1 << (flip % 8)
    payload = envelope.signing_payload()
    assert verify_ed25519(signer.public_key, payload, bytes(signature)) == _pycryptodome_verifies(
        signer.public_key, payload, bytes(signature)
    )
