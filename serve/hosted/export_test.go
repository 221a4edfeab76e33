package hosted

// OpenWorkspaces is how many workspaces g has open, for tests.
func OpenWorkspaces(g *Gateway) int { return g.spaces.count() }
