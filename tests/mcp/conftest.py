"""pytest configuration for the MCP server's stdio tests (test_mcp_stdio.py)."""


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs a CUDA device (skips with a reason without one)")
