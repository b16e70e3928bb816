"""The test suite's own use of the services: Redis on its own database number, never flushing someone else's."""

from __future__ import annotations

import pytest

from tests.conftest import SUITE_MARKER, TEST_REDIS_DB, claim_test_database, suite_redis_url


def test_the_suite_uses_its_own_redis_database_number():
    assert suite_redis_url("redis://127.0.0.1:6379/0") == f"redis://127.0.0.1:6379/{TEST_REDIS_DB}"
    assert suite_redis_url("rediss://user:pw@cache:6380/3") == f"rediss://user:pw@cache:6380/{TEST_REDIS_DB}"
    assert suite_redis_url("unix:///run/redis.sock?db=2") == f"unix:///run/redis.sock?db={TEST_REDIS_DB}"


def test_the_fixture_refuses_to_flush_a_database_it_did_not_write(redis_url):
    import redis

    connection = redis.Redis.from_url(redis_url)
    assert connection.connection_pool.connection_kwargs["db"] == TEST_REDIS_DB and connection.exists(SUITE_MARKER)
    connection.delete(SUITE_MARKER)
    connection.set("someone-elses-key", "precious")
    with pytest.raises(RuntimeError, match=f"refusing to flush Redis database {TEST_REDIS_DB}: it holds 1 key"):
        claim_test_database(connection)
    assert connection.get("someone-elses-key") == b"precious"
    connection.delete("someone-elses-key")  # leave the database to the fixture as it found it
    claim_test_database(connection)
