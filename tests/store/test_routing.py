"""Pool routing on sifting-style keys: TFT balances by construction, a hash skews."""

from collections import Counter

from colony.store import owner


def sifting_keys(stage: int, k: int, sources: int) -> list[str]:
    """Keys like the sifting pipeline's: stage id + matched bits + source rank, tag = bits."""
    return [f"s{stage}/src{src}/b{bits}" for bits in range(2 ** k) for src in range(sources)]


def test_tft_balances_sifting_keys_and_hash_skews():
    members = [f"nic{i}" for i in range(16)]
    keys = sifting_keys(stage=1, k=4, sources=1)       # 16 bins to 16 PEs
    tft = Counter(owner(k, members, "tft") for k in keys)
    hsh = Counter(owner(k, members, "hash") for k in keys)
    assert sorted(tft.values()) == [1] * 16            # one bin per PE: perfect
    assert max(hsh.values()) >= 2 and len(hsh) < 16    # collisions leave PEs idle
    # more sources: TFT stays exact, the hash's worst member carries well above the mean
    keys = sifting_keys(stage=2, k=4, sources=8)
    tft = Counter(owner(k, members, "tft") for k in keys)
    hsh = Counter(owner(k, members, "hash") for k in keys)
    assert set(tft.values()) == {8}
    assert max(hsh.values()) / (len(keys) / 16) > 1.3
