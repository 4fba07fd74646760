import pytest

from tests.paths import shared_data


@pytest.fixture
def shared_spaseq():
    return shared_data() / "spaseq"
