"""A cluster key file must belong to the user loading it (or root), not only be 0600:
another user could have planted the keys or could change them."""
import os

import pytest

from dtf.wire import security


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another user needs root")
def test_a_key_file_owned_by_another_user_is_refused(tmp_path):
    path = tmp_path / "keys.json"
    security.ClusterKeys.generate().save(path)
    assert security.ClusterKeys.load(path).public  # our own: accepted
    os.chown(path, 12345, 12345)
    with pytest.raises(security.KeyFileError, match="owned by uid 12345, not by this user"):
        security.ClusterKeys.load(path)


def test_a_key_file_of_ones_own_is_accepted(tmp_path):
    path = tmp_path / "keys.json"
    keys = security.ClusterKeys.generate()
    keys.save(path)
    assert security.ClusterKeys.load(path) == keys
