// placeholder: filled in by the Step 1 work
