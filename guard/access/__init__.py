"""Who may do what: roles (``roles``), the tokens that carry one (``tokens``), and the gate's
policy that gives every actor its role (``policy``). docs/ACCESS.md."""
