"""A config file that is not UTF-8 is a ConfigError, not a UnicodeDecodeError (issue 14)."""

import pytest

from colony.config.schema import ConfigError, load


def test_non_utf8_config_is_a_config_error(tmp_path):
    p = tmp_path / "colony.toml"
    p.write_bytes(b'name = "caf\xe9"\n')        # Latin-1 bytes
    with pytest.raises(ConfigError, match="is not UTF-8 text .*save it as UTF-8"):
        load(p)
