"""One package per scenario: state / rules / render / parse / env."""
