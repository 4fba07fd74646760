import pytest

from tests.support.shared_data import shared_data


@pytest.fixture
def shared_spaseq():
    """The SPAseq reference engine's test inputs (../shared/data/spaseq); skips without them."""
    return shared_data("spaseq")
