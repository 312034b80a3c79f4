"""Stand-in backend plugins for the tests: faithful in what they model, small in what they are."""
